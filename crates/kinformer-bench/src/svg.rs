//! Hand-written SVG bar charts: one group of bars per size, one bar per peer.

use std::fmt::Write;

/// Fill colours by peer name (stable across charts).
fn colour(peer: &str) -> &'static str {
    match peer {
        "kinformer" => "#2b7bba",
        "kube-rs" => "#e6862a",
        "client-go" => "#3a9e4f",
        "client-go-json" => "#9bd08f",
        "floor" => "#8c8c8c",
        _ => "#aa4499",
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A grouped bar chart. `groups` are (label, bars) with bars as (peer, value); missing values
/// are simply absent bars. Lower or higher is better as `unit` says.
pub(crate) fn bar_chart(
    title: &str,
    unit: &str,
    groups: &[(String, Vec<(String, f64)>)],
) -> String {
    let max = groups
        .iter()
        .flat_map(|(_, bars)| bars.iter().map(|(_, v)| *v))
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let bar_w = 28.0;
    let gap = 24.0;
    let peers: Vec<String> = {
        let mut p: Vec<String> = Vec::new();
        for (_, bars) in groups {
            for (peer, _) in bars {
                if !p.contains(peer) {
                    p.push(peer.clone());
                }
            }
        }
        p
    };
    let group_w = bar_w * peers.len().max(1) as f64 + gap;
    let (left, top, plot_h) = (70.0, 40.0, 220.0);
    let width = left + group_w * groups.len().max(1) as f64 + 140.0;
    let height = top + plot_h + 50.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(
        s,
        r#"<text x="{left}" y="20" font-size="14" font-weight="bold">{} ({})</text>"#,
        escape(title),
        escape(unit)
    );
    let base = top + plot_h;
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{base}" x2="{:.0}" y2="{base}" stroke="#333"/>"##,
        width - 130.0
    );
    for i in 0..=4 {
        let v = max * f64::from(i) / 4.0;
        let y = base - plot_h * f64::from(i) / 4.0;
        let _ = write!(
            s,
            r##"<text x="{:.0}" y="{y:.0}" text-anchor="end">{}</text><line x1="{left}" y1="{y:.0}" x2="{:.0}" y2="{y:.0}" stroke="#ddd"/>"##,
            left - 6.0,
            fmt_num(v),
            width - 130.0
        );
    }
    for (gi, (label, bars)) in groups.iter().enumerate() {
        let gx = left + gap / 2.0 + group_w * gi as f64;
        for (peer, v) in bars {
            let pi = peers.iter().position(|p| p == peer).unwrap_or(0);
            let h = plot_h * v / max;
            let x = gx + bar_w * pi as f64;
            let _ = write!(
                s,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                base - h,
                bar_w - 3.0,
                colour(peer),
                escape(peer),
                fmt_num(*v)
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.0}" text-anchor="middle">{}</text>"#,
            gx + bar_w * peers.len() as f64 / 2.0,
            base + 16.0,
            escape(label)
        );
    }
    for (pi, peer) in peers.iter().enumerate() {
        let y = top + 16.0 * pi as f64;
        let x = width - 120.0;
        let _ = write!(
            s,
            r#"<rect x="{x:.0}" y="{:.0}" width="10" height="10" fill="{}"/><text x="{:.0}" y="{y:.0}" dy="9">{}</text>"#,
            y,
            colour(peer),
            x + 14.0,
            escape(peer)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A short number: 3 significant digits, thousands grouped with k/M.
pub(crate) fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_one_bar_per_value_and_a_legend_entry_per_peer() {
        let groups = vec![
            (
                "10k".to_string(),
                vec![("kinformer".to_string(), 1.0), ("floor".to_string(), 2.0)],
            ),
            ("50k".to_string(), vec![("kinformer".to_string(), 4.0)]),
        ];
        let svg = bar_chart("W1 <sync>", "ms", &groups);
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("<title>").count(), 3);
        assert_eq!(svg.matches("width=\"10\"").count(), 2);
        assert!(svg.contains("W1 &lt;sync&gt;"));
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(fmt_num(123_456.0), "123.5k");
        assert_eq!(fmt_num(2_500_000.0), "2.50M");
        assert_eq!(fmt_num(12.345), "12.35");
    }
}
