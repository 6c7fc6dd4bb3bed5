//! Benchmarks (placeholder until the serve benchmarks land).
fn main() {}
