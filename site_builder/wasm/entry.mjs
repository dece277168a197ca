export * from '@duckdb/duckdb-wasm';
