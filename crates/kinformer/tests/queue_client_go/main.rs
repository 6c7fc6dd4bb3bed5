//! The ports of client-go's queue tests in one binary (one link instead of four):
//! `delta_fifo_test.go` and `the_real_fifo_test.go`, with their shared helpers.

mod delta_fifo;
mod delta_fifo_errors;
mod delta_fifo_support;
mod real_fifo;
mod real_fifo_atomic;
mod real_fifo_support;
