//! Informers over the embedded API server and scripted sources, in the queue mode under test:
//! `scripts/test.sh` runs this binary twice, on the default `RealFifo` and with
//! `KINFORMER_QUEUE_MODE=delta-fifo` (see `queue_mode`). One binary instead of one per file:
//! the informer, client and server code they share is compiled and linked once.

mod backlog;
mod crd_schema;
mod factory;
mod metadata;
mod namespace_set;
mod order;
mod protobuf;
mod source_hostile;

#[path = "../embedded_support/mod.rs"]
mod embedded_support;
#[allow(dead_code)]
#[path = "../../examples/namespace_set_controller.rs"]
mod namespace_set_example;
#[path = "../queue_mode/mod.rs"]
mod queue_mode;
