//! The shared informer and the controller runner against client-go's `FakeControllerSource`,
//! in one binary (one link instead of two): `shared_informer_test.go`'s scenarios and the
//! controller runner's.

mod controller_leader;
mod controller_runner;
mod controller_ryw;
mod handler_shutdown;
#[path = "../leader_support/mod.rs"]
mod leader_support;
#[path = "../queue_mode/mod.rs"]
mod queue_mode;
mod shared;
mod support;
