//! The audit's plots as standalone SVG, the same text for the CLI's files and the page: accuracy
//! (mean ± std over the batches) against each study's setting, a line per attack, and the columns'
//! leakage as bars. Written by hand: a few lines, circles and labels; a plotting crate would bring
//! font handling for text the browser lays out anyway.
use std::fmt::Write;

use super::grid::{Point, Study};
use super::summary::{Audit, SummaryRow};
use crate::config::AttackKind;
use crate::report::fmt_epsilon;

const W: f64 = 640.0;
const H: f64 = 360.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 70.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// File name (without .svg) and title of a study's plot.
pub fn study_name(study: Study) -> (&'static str, &'static str, &'static str) {
    match study {
        Study::BatchSize => ("batch-size", "Accuracy against batch size", "rows per batch (FedSGD)"),
        Study::Noise => (
            "noise",
            "Accuracy against noise",
            "noise multiplier σ (updates clipped to C)",
        ),
        Study::Clients => (
            "clients",
            "Accuracy against clients averaged",
            "clients averaged (secure aggregation)",
        ),
        Study::Fedavg => ("fedavg", "Accuracy under FedAvg", "local epochs E, local batch b"),
        Study::ClientRows => (
            "client-rows",
            "Accuracy against the FedAvg client's rows",
            "client's rows n, local epochs E",
        ),
        Study::Training => (
            "training",
            "Accuracy after training",
            "epochs of training before the attack",
        ),
    }
}

fn tick(point: Point) -> String {
    match point {
        Point::BatchSize { batch } => batch.to_string(),
        Point::Noise { sigma } => sigma.to_string(),
        Point::Clients { clients } => clients.to_string(),
        Point::Fedavg { epochs, local_batch } => format!("E{epochs} b{local_batch}"),
        Point::Training { epochs } => epochs.to_string(),
        Point::ClientRows { rows, epochs } => format!("n{rows} E{epochs}"),
    }
}

fn header(s: &mut String, title: &str, height: f64) {
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="{W}" height="{height}" font-family="system-ui, sans-serif" font-size="12" role="img" aria-label="{t}"><title>{t}</title><rect width="{W}" height="{height}" fill="white"/><text x="{LEFT}" y="22" font-size="15" font-weight="600">{t}</text>"#,
        t = esc(title)
    );
}

/// A study's plot, or None when the audit did not run that study.
pub fn study_svg(audit: &Audit, study: Study) -> Option<String> {
    let rows: Vec<&SummaryRow> = audit.rows.iter().filter(|r| r.point.study() == study).collect();
    if rows.is_empty() {
        return None;
    }
    let mut points: Vec<Point> = Vec::new();
    for r in &rows {
        if !points.contains(&r.point) {
            points.push(r.point);
        }
    }
    let (_, title, axis) = study_name(study);
    let axis = if study == Study::Noise {
        axis.replace('C', &format!("C = {}", audit.options.clip))
    } else {
        axis.to_string()
    };
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |i: usize| LEFT + pw * (i as f64 + 0.5) / points.len() as f64;
    let y = |v: f64| TOP + ph * (1.0 - v.clamp(0.0, 1.0));
    let mut s = String::new();
    header(&mut s, title, H);
    // Grid and the y axis: accuracy in %.
    for k in 0..=5 {
        let v = k as f64 / 5.0;
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" x2="{}" y1="{y0:.1}" y2="{y0:.1}" stroke="#e5e5e5"/><text x="{}" y="{:.1}" text-anchor="end" fill="#444">{}%</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            y(v) + 4.0,
            (v * 100.0).round(),
            y0 = y(v)
        );
    }
    let _ = write!(
        s,
        r##"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle" fill="#222">cells recovered</text>"##,
        TOP + ph / 2.0
    );
    for (i, p) in points.iter().enumerate() {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#222">{}</text>"##,
            x(i),
            TOP + ph + 18.0,
            esc(&tick(*p))
        );
        let row = rows.iter().find(|r| r.point == *p);
        if study == Study::Noise
            && let Some(e) = row.and_then(|r| r.epsilon)
        {
            // The accountant's ε, and beside it the canaries' where the audit ran them.
            let measured = row
                .and_then(|r| r.canaries.as_ref())
                .map_or(String::new(), |c| format!(" · measured {}", c.every_round.brief()));
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#666" font-size="10">ε {}{}</text>"##,
                x(i),
                TOP + ph + 32.0,
                esc(&fmt_epsilon(e)),
                esc(&measured)
            );
        }
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#222">{}</text>"##,
        LEFT + pw / 2.0,
        H - 14.0,
        esc(&axis)
    );
    attack_lines(&mut s, &rows, &points, &x, &y);
    s.push_str("</svg>");
    Some(s)
}

/// One line per attack over the study's points, with error bars of ± one std and a legend.
fn attack_lines(
    s: &mut String,
    rows: &[&SummaryRow],
    points: &[Point],
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    let mut attacks: Vec<AttackKind> = Vec::new();
    for r in rows {
        if !attacks.contains(&r.attack) {
            attacks.push(r.attack);
        }
    }
    for (k, &a) in attacks.iter().enumerate() {
        let line: Vec<(usize, &SummaryRow)> = points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| rows.iter().find(|r| r.point == *p && r.attack == a).map(|r| (i, *r)))
            .collect();
        let c = a.colour();
        let dash = if a.is_guess() { r#" stroke-dasharray="5 4""# } else { "" };
        let path: Vec<String> = line
            .iter()
            .map(|(i, r)| format!("{:.1},{:.1}", x(*i), y(r.accuracy.mean)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="2"{dash}/>"#,
            path.join(" ")
        );
        for (i, r) in &line {
            let (m, sd) = (r.accuracy.mean, r.accuracy.std);
            let _ = write!(
                s,
                r#"<line x1="{xi:.1}" x2="{xi:.1}" y1="{:.1}" y2="{:.1}" stroke="{c}"/><circle cx="{xi:.1}" cy="{:.1}" r="3.5" fill="{c}"><title>{}: {} {:.1} ± {:.1}%</title></circle>"#,
                y(m - sd),
                y(m + sd),
                y(m),
                esc(&r.point.label()),
                a,
                100.0 * m,
                100.0 * sd,
                xi = x(*i)
            );
        }
        let ly = TOP + 10.0 + 20.0 * k as f64;
        let _ = write!(
            s,
            r##"<line x1="{lx}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}" fill="#222">{a}</text>"##,
            W - RIGHT + 42.0,
            W - RIGHT + 48.0,
            ly + 4.0,
            lx = W - RIGHT + 16.0
        );
    }
}

/// The columns as bars: the attack's accuracy beside guessing, most leaking first.
pub fn features_svg(audit: &Audit) -> Option<String> {
    if audit.features.is_empty() {
        return None;
    }
    let bar = 14.0;
    let gap = 8.0;
    let label_w = 170.0;
    let height = TOP + 30.0 + audit.features.len() as f64 * (2.0 * bar + gap) + 20.0;
    let pw = W - label_w - 40.0;
    let mut s = String::new();
    header(
        &mut s,
        &format!("Which columns leak (batch of {} rows)", audit.options.reference_batch),
        height,
    );
    let Some(attack) = audit.judged else {
        return None;
    };
    let _ = write!(
        s,
        r##"<rect x="{label_w}" y="{:.1}" width="12" height="10" fill="{}"/><text x="{:.1}" y="{:.1}" fill="#222">{attack}</text><rect x="{:.1}" y="{:.1}" width="12" height="10" fill="{}"/><text x="{:.1}" y="{:.1}" fill="#222">guessing from the marginals</text>"##,
        TOP - 4.0,
        attack.colour(),
        label_w + 16.0,
        TOP + 5.0,
        label_w + 110.0,
        TOP - 4.0,
        AttackKind::Random.colour(),
        label_w + 126.0,
        TOP + 5.0
    );
    for (i, f) in audit.features.iter().enumerate() {
        let y0 = TOP + 20.0 + i as f64 * (2.0 * bar + gap);
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#222">{}</text>"##,
            label_w - 8.0,
            y0 + bar + 4.0,
            esc(&f.feature.name)
        );
        for (k, (v, c)) in [(f.accuracy, attack.colour()), (f.random, AttackKind::Random.colour())]
            .into_iter()
            .enumerate()
        {
            let yb = y0 + k as f64 * bar;
            let _ = write!(
                s,
                r##"<rect x="{label_w}" y="{yb:.1}" width="{:.1}" height="{:.1}" fill="{c}"/><text x="{:.1}" y="{:.1}" fill="#444" font-size="10">{:.0}%</text>"##,
                pw * v.clamp(0.0, 1.0),
                bar - 2.0,
                label_w + pw * v.clamp(0.0, 1.0) + 4.0,
                yb + bar - 4.0,
                100.0 * v
            );
        }
    }
    s.push_str("</svg>");
    Some(s)
}

/// Every plot of an audit: (file stem, SVG).
pub fn all_svgs(audit: &Audit) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = super::grid::STUDIES
        .iter()
        .filter_map(|&st| study_svg(audit, st).map(|s| (study_name(st).0.to_string(), s)))
        .collect();
    if let Some(s) = features_svg(audit) {
        out.push(("features".into(), s));
    }
    out
}
