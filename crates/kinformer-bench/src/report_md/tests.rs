//! Unit tests of the report writer.

use super::*;

#[test]
fn median_of_odd_and_even_counts_ignores_missing() {
    assert_eq!(median([Some(3.0), None, Some(1.0), Some(2.0)]), Some(2.0));
    assert_eq!(median([Some(4.0), Some(1.0)]), Some(2.5));
    assert_eq!(median([None]), None);
}

fn run(tier: &str, peer: &str, n: u64, sync: f64) -> PeerReport {
    PeerReport {
        peer: peer.into(),
        tier: tier.into(),
        workload: "w1".into(),
        n,
        sync_ms: Some(sync),
        ..Default::default()
    }
}

#[test]
fn the_floor_is_the_fastest_run_of_any_mode() {
    let results = vec![
        run("real", "floor-paged", 10, 300.0),
        run("real", "floor-paged", 10, 200.0),
        run("real", "floor-unpaged", 10, 250.0),
        run("real", "floor-unpaged", 10, 400.0),
    ];
    let m = Medians::least(&results, |r| r.sync_ms);
    assert_eq!(m.floor("real", 10), Some((200.0, "paged")));
    let mut with_streaming = results.clone();
    with_streaming.push(run("real", "floor-streaming", 10, 190.0));
    with_streaming.push(run("real", "floor-streaming", 10, 500.0));
    let m = Medians::least(&with_streaming, |r| r.sync_ms);
    assert_eq!(m.floor("real", 10), Some((190.0, "streaming")));
}

#[test]
fn the_floor_is_the_faster_fetch_mode_per_tier() {
    let results = vec![
        run("real", "floor-paged", 10, 300.0),
        run("real", "floor-paged", 10, 320.0),
        run("real", "floor-unpaged", 10, 250.0),
        run("embedded", "floor-paged", 10, 100.0),
        run("embedded", "floor-unpaged", 10, 150.0),
    ];
    let m = Medians::of(&results, |r| r.sync_ms);
    assert_eq!(m.floor("real", 10), Some((250.0, "unpaged")));
    assert_eq!(m.floor("embedded", 10), Some((100.0, "paged")));
    assert_eq!(m.floor("real", 99), None);
    assert_eq!(m.get("real", "w1", 10, "floor-paged"), Some(310.0));
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
        run("real", "kinformer", 10, 1170.0),
        run("real", "client-go", 10, 951.0),
        run("real", "floor-unpaged", 10, 900.0),
        run("embedded", "kinformer", 10, 300.0),
        run("embedded", "client-go-json", 10, 2000.0),
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

#[test]
fn metadata_and_queue_mode_rows_have_their_own_tables() {
    let dir = std::env::temp_dir().join(format!("kb-report-meta-{}", std::process::id()));
    let mut opts = ReportOptions::new(true);
    opts.out_dir = dir.clone();
    let bpo = |peer: &str, w: &str, b: f64| PeerReport {
        workload: w.into(),
        bytes_per_object: Some(b),
        ..run("real", peer, 10, 100.0)
    };
    let w3 = |peer: &str, ms: f64| PeerReport {
        workload: "w3".into(),
        relist_ms: Some(ms),
        ..run("embedded", peer, 10, 0.0)
    };
    let results = vec![
        bpo("kinformer", "w1", 50_000.0),
        bpo("kinformer-metadata", "w1", 30_000.0),
        bpo("client-go-metadata", "w1", 10_000.0),
        bpo("kinformer-metadata", "w1t", 3_000.0),
        w3("kinformer", 200.0),
        w3("kinformer-delta-fifo", 400.0),
    ];
    let path = write_report(&opts, &results, &Notes::default()).unwrap();
    let md = std::fs::read_to_string(path).unwrap();
    assert!(
        md.contains("| real | 10 | none | 100 | 100 | 30.0k | 10.0k | 50.0k | 3.00× |"),
        "{md}"
    );
    assert!(
        md.contains("| real | 10 | drop managedFields | 100 | – | 3000 | – | – | – |"),
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
        run("real", "kinformer", 10, 510.0),
        run("real", "client-go", 10, 500.0),
        run("real", "kinformer", 10, 300.0),
        run("real", "client-go", 10, 600.0),
        run("real", "kinformer", 10, 520.0),
        run("real", "client-go", 10, 500.0),
        run("real", "kinformer", 10, 490.0),
        run("real", "client-go", 10, 450.0),
        run("real", "kinformer", 20, 1.0),
        run("embedded", "client-go", 10, 1.0),
    ];
    let (r, faster, rounds) =
        same_round(&results, "real", "w1", 10, "kinformer", "client-go").unwrap();
    assert_eq!((faster, rounds), (1, 4));
    // ratios 1.02, 0.5, 1.04, 1.089: median (1.02 + 1.04) / 2
    assert!((r - 1.03).abs() < 1e-9, "{r}");
    assert!(same_round(&results, "real", "w1", 20, "kinformer", "client-go").is_none());
}
