# vllm bench serve --model Qwen/Qwen2.5-7B-Instruct --dataset-name random --random-input-len 2048 \
#   --random-output-len 2048 --max-concurrency 32 --num-prompts 32
# Traffic request rate: inf
# Burstiness factor: 1.0 (Poisson process)
# Maximum request concurrency: 32
# ============ Serving Benchmark Result ============
# Successful requests:                     32        
# Benchmark duration (s):                  150.87    
# Total input tokens:                      65536     
# Total generated tokens:                  65536     
# Request throughput (req/s):              0.21      
# Output token throughput (tok/s):         434.40    
# Total Token throughput (tok/s):          868.80    
# ---------------Time to First Token----------------
# Mean TTFT (ms):                          7279.56   
# Median TTFT (ms):                        7099.88   
# P99 TTFT (ms):                           10999.46  
# -----Time per Output Token (excl. 1st token)------
# Mean TPOT (ms):                          70.14     
# Median TPOT (ms):                        70.23     
# P99 TPOT (ms):                           72.63     
# ==================================================
