//! Unit tests of the report writer.

use super::medians::{Medians, median, ratio, same_round, verdict};
use super::*;

#[test]
fn median_of_odd_and_even_counts_ignores_missing() {
    assert_eq!(median([Some(3.0), None, Some(1.0), Some(2.0)]), Some(2.0));
    assert_eq!(median([Some(4.0), Some(1.0)]), Some(2.5));
    assert_eq!(median([None]), None);
}

fn run(tier: Tier, peer: Peer, n: u64, sync: f64) -> PeerReport {
    PeerReport {
        tier: Some(tier),
        sync_ms: Some(sync),
        ..PeerReport::new(peer, Workload::W1, n)
    }
}

#[test]
fn the_floor_is_the_fastest_run_of_any_mode() {
    let results = vec![
        run(Tier::Real, Peer::FloorPaged, 10, 300.0),
        run(Tier::Real, Peer::FloorPaged, 10, 200.0),
        run(Tier::Real, Peer::FloorUnpaged, 10, 250.0),
        run(Tier::Real, Peer::FloorUnpaged, 10, 400.0),
    ];
    let m = Medians::least(&results, |r| r.sync_ms);
    assert_eq!(m.floor(Tier::Real, 10), Some((200.0, "paged")));
    let mut with_streaming = results.clone();
    with_streaming.push(run(Tier::Real, Peer::FloorStreaming, 10, 190.0));
    with_streaming.push(run(Tier::Real, Peer::FloorStreaming, 10, 500.0));
    let m = Medians::least(&with_streaming, |r| r.sync_ms);
    assert_eq!(m.floor(Tier::Real, 10), Some((190.0, "streaming")));
}

#[test]
fn the_floor_is_the_faster_fetch_mode_per_tier() {
    let results = vec![
        run(Tier::Real, Peer::FloorPaged, 10, 300.0),
        run(Tier::Real, Peer::FloorPaged, 10, 320.0),
        run(Tier::Real, Peer::FloorUnpaged, 10, 250.0),
        run(Tier::Embedded, Peer::FloorPaged, 10, 100.0),
        run(Tier::Embedded, Peer::FloorUnpaged, 10, 150.0),
    ];
    let m = Medians::of(&results, |r| r.sync_ms);
    assert_eq!(m.floor(Tier::Real, 10), Some((250.0, "unpaged")));
    assert_eq!(m.floor(Tier::Embedded, 10), Some((100.0, "paged")));
    assert_eq!(m.floor(Tier::Real, 99), None);
    assert_eq!(
        m.get(Tier::Real, Workload::W1, 10, Peer::FloorPaged),
        Some(310.0)
    );
}

#[test]
fn verdicts_say_plainly_who_is_behind() {
    assert_eq!(
        verdict(1170.0, 951.0, "slower", "faster"),
        "**1.23× slower** (behind)"
    );
    assert_eq!(verdict(500.0, 1000.0, "slower", "faster"), "2.00× faster");
    assert_eq!(verdict(1000.0, 990.0, "slower", "faster"), "on par (1.01×)");
    assert_eq!(ratio(Some(1.0), None), "–");
    assert_eq!(ratio(Some(3.0), Some(2.0)), "1.50×");
}

#[test]
fn the_report_puts_both_tiers_side_by_side_and_headlines_the_real_one() {
    let dir = std::env::temp_dir().join(format!("kb-report-{}", std::process::id()));
    let mut opts = ReportOptions::new(true);
    opts.out_dir = dir.clone();
    let results = vec![
        run(Tier::Real, Peer::Kinformer, 10, 1170.0),
        run(Tier::Real, Peer::ClientGo, 10, 951.0),
        run(Tier::Real, Peer::FloorUnpaged, 10, 900.0),
        run(Tier::Embedded, Peer::Kinformer, 10, 300.0),
        run(Tier::Embedded, Peer::ClientGoJson, 10, 2000.0),
    ];
    let path = write_report(&opts, &results, &Notes::default()).unwrap();
    let md = std::fs::read_to_string(path).unwrap();
    assert!(
        md.contains("kinformer is **1.23× slower** (behind)"),
        "{md}"
    );
    assert!(md.contains("| real | 10 | 900 (unpaged) | 1170 |"), "{md}");
    assert!(md.contains("| embedded | 10 | – | 300 |"), "{md}");
    assert!(
        !md.contains("Metadata-only informers (W1"),
        "no rows without runs"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The lean cache's bytes when synced are set against client-go's settled W4 bytes.
#[test]
fn the_headline_sets_lean_bytes_at_sync_against_client_go_w4() {
    let dir = std::env::temp_dir().join(format!("kb-report-sync-{}", std::process::id()));
    let mut opts = ReportOptions::new(true);
    opts.out_dir = dir.clone();
    let results = vec![
        run(Tier::Real, Peer::Kinformer, 10, 500.0),
        PeerReport {
            bytes_per_object: Some(12_000.0),
            ..run(Tier::Real, Peer::ClientGo, 10, 500.0)
        },
        PeerReport {
            bytes_per_object: Some(2_000.0),
            bytes_per_object_at_sync: Some(3_000.0),
            ..run(Tier::Real, Peer::KinformerLean, 10, 700.0)
        },
    ];
    let path = write_report(&opts, &results, &Notes::default()).unwrap();
    let md = std::fs::read_to_string(path).unwrap();
    let line = md
        .lines()
        .find(|l| l.contains("bytes per cached pod when synced"))
        .unwrap_or_else(|| panic!("no at-sync sentence: {md}"));
    assert!(
        line.contains("kinformer 3000 B, client-go 12.0k B"),
        "{line}"
    );
    assert!(line.contains("4.00× less memory"), "{line}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn metadata_and_queue_mode_rows_have_their_own_tables() {
    let dir = std::env::temp_dir().join(format!("kb-report-meta-{}", std::process::id()));
    let mut opts = ReportOptions::new(true);
    opts.out_dir = dir.clone();
    let bpo = |peer: Peer, w: Workload, b: f64| PeerReport {
        workload: w,
        bytes_per_object: Some(b),
        ..run(Tier::Real, peer, 10, 100.0)
    };
    let w3 = |peer: Peer, ms: f64| PeerReport {
        workload: Workload::W3,
        relist_ms: Some(ms),
        ..run(Tier::Embedded, peer, 10, 0.0)
    };
    let results = vec![
        bpo(Peer::Kinformer, Workload::W1, 50_000.0),
        bpo(Peer::KinformerMetadata, Workload::W1, 30_000.0),
        bpo(Peer::ClientGoMetadata, Workload::W1, 10_000.0),
        bpo(Peer::KinformerMetadata, Workload::W1t, 3_000.0),
        bpo(Peer::KinformerMetadataLean, Workload::W1, 2_000.0),
        w3(Peer::Kinformer, 200.0),
        w3(Peer::KinformerDeltaFifo, 400.0),
    ];
    let path = write_report(&opts, &results, &Notes::default()).unwrap();
    let md = std::fs::read_to_string(path).unwrap();
    assert!(
        md.contains(
            "| real | 10 | none | 100 | 100 | 100 | 30.0k | 2000 | 10.0k | 50.0k | 3.00× | 0.20× |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| real | 10 | drop managedFields | 100 | – | – | 3000 | – | – | – | – | – |"),
        "{md}"
    );
    assert!(
        md.contains("| embedded | W3 relist, N = 10 (ms) | 200 | 400 | 0.50× |"),
        "{md}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn same_round_ratios_pair_the_ith_runs_and_count_the_rounds_won() {
    // medians 500 against 500: at par taken apart; round by round kinformer is behind in
    // three of four rounds
    let results = vec![
        run(Tier::Real, Peer::Kinformer, 10, 510.0),
        run(Tier::Real, Peer::ClientGo, 10, 500.0),
        run(Tier::Real, Peer::Kinformer, 10, 300.0),
        run(Tier::Real, Peer::ClientGo, 10, 600.0),
        run(Tier::Real, Peer::Kinformer, 10, 520.0),
        run(Tier::Real, Peer::ClientGo, 10, 500.0),
        run(Tier::Real, Peer::Kinformer, 10, 490.0),
        run(Tier::Real, Peer::ClientGo, 10, 450.0),
        run(Tier::Real, Peer::Kinformer, 20, 1.0),
        run(Tier::Embedded, Peer::ClientGo, 10, 1.0),
    ];
    let (r, faster, rounds) = same_round(
        &results,
        Tier::Real,
        Workload::W1,
        10,
        Peer::Kinformer,
        Peer::ClientGo,
    )
    .unwrap();
    assert_eq!((faster, rounds), (1, 4));
    // ratios 1.02, 0.5, 1.04, 1.089: median (1.02 + 1.04) / 2
    assert!((r - 1.03).abs() < 1e-9, "{r}");
    assert!(
        same_round(
            &results,
            Tier::Real,
            Workload::W1,
            20,
            Peer::Kinformer,
            Peer::ClientGo
        )
        .is_none()
    );
}

#[test]
fn checkpointed_results_render_into_a_report() {
    let dir = std::env::temp_dir().join(format!("kinformer-bench-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |peer: Peer, sync: f64| PeerReport {
        tier: Some(Tier::Embedded),
        objects: 2_000,
        sync_ms: Some(sync),
        bytes_per_object: Some(1_000.0),
        ..PeerReport::new(peer, Workload::W1, 2_000)
    };
    crate::report::checkpoint(
        &dir,
        &[run(Peer::Kinformer, 90.0), run(Peer::KubeRs, 140.0)],
    );
    let mut opts = ReportOptions::new(true);
    opts.out_dir = dir.join("out");
    let (results, notes) =
        crate::report::load_results(&opts, &dir.join("results.partial.json")).unwrap();
    let md = write_report(&opts, &results, &notes).unwrap();
    let text = std::fs::read_to_string(md).unwrap();
    assert!(text.contains("Rendered from"), "{text}");
    assert!(
        text.contains("| kube-rs |") || text.contains("kube-rs"),
        "{text}"
    );
    assert!(crate::report::load_results(&opts, &dir.join("missing.json")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_cpu_table_gives_cpu_per_pod_and_cores_for_peers_that_report_it() {
    let cpu = |peer: Peer, sync: f64, cpu: f64| PeerReport {
        cpu_ms_at_sync: Some(cpu),
        ..run(Tier::Real, peer, 1000, sync)
    };
    let results = vec![
        cpu(Peer::Kinformer, 100.0, 120.0),
        cpu(Peer::Kinformer, 200.0, 100.0),
        cpu(Peer::Kinformer, 100.0, 80.0),
        cpu(Peer::ClientGo, 90.0, 90.0),
        // no CPU figure: no column
        run(Tier::Real, Peer::KubeRs, 1000, 300.0),
    ];
    let mut md = String::new();
    tables::w1_cpu_table(&mut md, &medians::Tables::new(&results), &results);
    assert!(
        md.contains("| tier | N | kinformer | client-go |\n|---|---|---|---|\n"),
        "{md}"
    );
    // medians: 100 µs a pod and 0.80 cores (of 1.2, 0.5, 0.8); client-go 90 µs, 1.00
    assert!(
        md.contains("| real | 1000 | 100 (0.80) | 90 (1.00) |"),
        "{md}"
    );
    let mut none = String::new();
    let no_cpu = vec![run(Tier::Real, Peer::Kinformer, 1000, 100.0)];
    tables::w1_cpu_table(&mut none, &medians::Tables::new(&no_cpu), &no_cpu);
    assert!(none.is_empty(), "{none}");
}
