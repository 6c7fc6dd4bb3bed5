//! The queue mode the informer tests run in. `scripts/test.sh` runs every test binary that
//! includes this module twice: on the default `RealFifo`, then with
//! `KINFORMER_QUEUE_MODE=delta-fifo`. The library reads no environment variable; a test
//! chooses its informers' mode explicitly, through the configuration this returns.

use kinformer::InformerConfig;
use kinformer::informer::QueueMode;

/// `InformerConfig::default()` in the queue mode under test (`KINFORMER_QUEUE_MODE`:
/// `real-fifo`, the default, or `delta-fifo`; anything else fails the test).
pub fn config<K>() -> InformerConfig<K> {
    let mode = match std::env::var("KINFORMER_QUEUE_MODE") {
        Err(_) => QueueMode::default(),
        Ok(v) => QueueMode::parse(&v)
            .unwrap_or_else(|| panic!("KINFORMER_QUEUE_MODE={v:?}: real-fifo or delta-fifo")),
    };
    InformerConfig::default().queue_mode(mode)
}
