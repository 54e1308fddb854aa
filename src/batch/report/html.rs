//! Renders [`ReportData`] as one self-contained HTML file: inline CSS,
//! inline SVG charts, no script, no network. Text is escaped by the
//! template engine (askama); chart geometry is computed here so the
//! template stays declarative.

use askama::Template;

use super::{ModelRow, ReportData};

const OUTCOME_COLOURS: [(&str, &str); 4] = [
    ("accepted", "#2e7d32"),
    ("retry", "#f9a825"),
    ("rejected", "#c62828"),
    ("dead_letter", "#6a1b9a"),
];
/// Models drawn in the outcomes chart (the table lists all).
const CHART_MODELS: usize = 12;

pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    pub colour: &'static str,
    pub title: String,
}

pub struct Label {
    pub x: f64,
    pub y: f64,
    pub text: String,
    pub anchor: &'static str,
}

pub struct Chart {
    pub width: u32,
    pub height: u32,
    pub rects: Vec<Rect>,
    pub labels: Vec<Label>,
}

#[derive(Template)]
#[template(path = "report.html")]
struct Page<'a> {
    d: &'a ReportData,
    outcomes_chart: Chart,
    score_chart: Chart,
    findings_chart: Chart,
    legend: &'static [(&'static str, &'static str)],
}

/// Formatting functions the template calls.
impl Page<'_> {
    fn pct(&self, n: &u64, of: &u64) -> String {
        if *of == 0 {
            "–".into()
        } else {
            format!("{:.1}%", *n as f64 * 100.0 / *of as f64)
        }
    }
    fn rate(&self, r: &ModelRow, n: &u64) -> String {
        format!("{:.1}%", r.rate(*n) * 100.0)
    }
    fn score(&self, s: &Option<f64>) -> String {
        s.map_or_else(|| "–".into(), |v| format!("{v:.2}"))
    }
    /// Four decimals; for totals too large to read as digits (a saturated
    /// total is about 1.8e308), scientific notation exact to the last digit
    /// (rounded to fewer, the largest total would read as infinite).
    fn usd(&self, v: &f64) -> String {
        if v.abs() < 1e12 {
            format!("{v:.4}")
        } else {
            format!("{v:e}")
        }
    }
}

pub fn render(d: &ReportData) -> Result<String, askama::Error> {
    Page {
        d,
        outcomes_chart: outcomes_chart(d),
        score_chart: score_chart(d),
        findings_chart: findings_chart(d),
        legend: &OUTCOME_COLOURS,
    }
    .render()
}

fn outcomes_chart(d: &ReportData) -> Chart {
    let (left, bar_w, row_h) = (220.0, 520.0, 22.0);
    let models = &d.models[..d.models.len().min(CHART_MODELS)];
    let mut c = Chart {
        width: 760,
        height: (models.len() as f64 * row_h + 10.0) as u32,
        rects: Vec::new(),
        labels: Vec::new(),
    };
    for (i, m) in models.iter().enumerate() {
        let y = 5.0 + i as f64 * row_h;
        c.labels.push(Label {
            x: left - 6.0,
            y: y + 14.0,
            text: format!("{}/{}", m.provider, m.model),
            anchor: "end",
        });
        let mut x = left;
        for (name, colour) in OUTCOME_COLOURS {
            let n = match name {
                "accepted" => m.accepted,
                "retry" => m.retry,
                "rejected" => m.rejected,
                _ => m.dead_letter,
            };
            let w = bar_w * m.rate(n);
            if w > 0.0 {
                c.rects.push(Rect {
                    x,
                    y,
                    w,
                    h: row_h - 4.0,
                    colour,
                    title: format!("{name}: {n} of {}", m.records),
                });
            }
            x += w;
        }
    }
    c
}

fn score_chart(d: &ReportData) -> Chart {
    let (left, bottom, plot_h, col_w) = (40.0, 180.0, 160.0, 52.0);
    let max = d.score_histogram.iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut c = Chart {
        width: 600,
        height: 210,
        rects: Vec::new(),
        labels: Vec::new(),
    };
    for (i, &n) in d.score_histogram.iter().enumerate() {
        let h = plot_h * n as f64 / max;
        let x = left + i as f64 * col_w;
        let lo = i as f64 / 10.0;
        c.rects.push(Rect {
            x,
            y: bottom - h,
            w: col_w - 6.0,
            h,
            colour: if lo < d.min_support {
                "#c62828"
            } else {
                "#1565c0"
            },
            title: format!("score {lo:.1}–{:.1}: {n}", lo + 0.1),
        });
        c.labels.push(Label {
            x: x + (col_w - 6.0) / 2.0,
            y: bottom + 16.0,
            text: format!("{lo:.1}"),
            anchor: "middle",
        });
        if n > 0 {
            c.labels.push(Label {
                x: x + (col_w - 6.0) / 2.0,
                y: bottom - h - 4.0,
                text: n.to_string(),
                anchor: "middle",
            });
        }
    }
    c
}

fn findings_chart(d: &ReportData) -> Chart {
    let (left, bar_w, row_h) = (180.0, 480.0, 22.0);
    let max = d.findings.values().copied().max().unwrap_or(0).max(1) as f64;
    let mut c = Chart {
        width: 760,
        height: (d.findings.len() as f64 * row_h + 10.0) as u32,
        rects: Vec::new(),
        labels: Vec::new(),
    };
    for (i, (kind, &n)) in d.findings.iter().enumerate() {
        let y = 5.0 + i as f64 * row_h;
        let w = bar_w * n as f64 / max;
        c.labels.push(Label {
            x: left - 6.0,
            y: y + 14.0,
            text: kind.clone(),
            anchor: "end",
        });
        c.rects.push(Rect {
            x: left,
            y,
            w,
            h: row_h - 4.0,
            colour: "#455a64",
            title: format!("{kind}: {n}"),
        });
        c.labels.push(Label {
            x: left + w + 6.0,
            y: y + 14.0,
            text: n.to_string(),
            anchor: "start",
        });
    }
    c
}
