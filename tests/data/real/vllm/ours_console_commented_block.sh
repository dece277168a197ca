# vllm bench serve --model Qwen/Qwen2.5-7B-Instruct --dataset-name random --random-input-len 2048 \
#   --random-output-len 2048 --max-concurrency 32 --num-prompts 32
# Traffic request rate: inf
# Burstiness factor: 1.0 (Poisson process)
# Maximum request concurrency: 32
# ============ Serving Benchmark Result ============
# Successful requests:                     32        
# Benchmark duration (s):                  142.61    
# Total input tokens:                      65536     
# Total generated tokens:                  65536     
# Request throughput (req/s):              0.22      
# Output token throughput (tok/s):         459.55    
# Total Token throughput (tok/s):          919.10    
# ---------------Time to First Token----------------
# Mean TTFT (ms):                          6912.40   
# Median TTFT (ms):                        6804.15   
# P99 TTFT (ms):                           10120.77  
# -----Time per Output Token (excl. 1st token)------
# Mean TPOT (ms):                          66.71     
# Median TPOT (ms):                        66.58     
# P99 TPOT (ms):                           69.02     
# ==================================================
