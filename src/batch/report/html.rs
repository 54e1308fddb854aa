//! Renders [`ReportData`] as one self-contained HTML file: inline CSS,
//! inline SVG charts, no script, no network. Text is escaped by the
//! template engine (askama); text from records that shares a line with the
//! report's own words sits in a `<bdi>`, so a bidi override in it reorders
//! nothing outside it. Chart geometry is computed here so the template
//! stays declarative.

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
    /// Every row of the findings table with its bar's share of the widest.
    findings: Vec<FindingRow>,
    legend: &'static [(&'static str, &'static str)],
}

/// One row of the findings table: its count is drawn as a bar in the row
/// itself, so no separate chart repeats the table.
pub struct FindingRow {
    pub label: String,
    pub key: String,
    pub count: u64,
    pub bar_pct: f64,
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
    fn usd(&self, v: &f64) -> String {
        usd(*v)
    }
    fn num(&self, n: impl Count) -> String {
        thousands(n.count())
    }
}

/// A count however many references the template puts in front of it.
trait Count {
    fn count(&self) -> u64;
}

impl Count for u64 {
    fn count(&self) -> u64 {
        *self
    }
}

impl<T: Count + ?Sized> Count for &T {
    fn count(&self) -> u64 {
        (**self).count()
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars: cents from $1 up (`$1,234.57`), four decimals below, where
/// per-answer costs live (`$0.0021`). Totals too large to read as digits (a
/// saturated total is about 1.8e308) in scientific notation exact to the
/// last digit (rounded to fewer, the largest total would read as infinite).
pub fn usd(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    if a >= 1e12 {
        format!("{sign}${a:e}")
    } else if a >= 1.0 {
        let cents = (a * 100.0).round() as u64;
        format!("{sign}${}.{:02}", thousands(cents / 100), cents % 100)
    } else {
        format!("{sign}${a:.4}")
    }
}

pub fn render(d: &ReportData) -> Result<String, askama::Error> {
    Page {
        d,
        outcomes_chart: outcomes_chart(d),
        score_chart: score_chart(d),
        findings: finding_rows(d),
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
                    title: format!("{name}: {} of {}", thousands(n), thousands(m.records)),
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
            title: format!("score {lo:.1}–{:.1}: {}", lo + 0.1, thousands(n)),
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
                text: thousands(n),
                anchor: "middle",
            });
        }
    }
    c
}

fn finding_rows(d: &ReportData) -> Vec<FindingRow> {
    let rows: Vec<(String, String, u64)> = d
        .findings
        .iter()
        .map(|(k, &n)| (k.clone(), format!("finding.{k}"), n))
        .chain(
            d.dead_letters
                .iter()
                .map(|(k, &n)| (format!("dead letter: {k}"), format!("dead_letter.{k}"), n)),
        )
        .collect();
    let max = rows.iter().map(|r| r.2).max().unwrap_or(0).max(1) as f64;
    rows.into_iter()
        .map(|(label, key, count)| FindingRow {
            label,
            key,
            count,
            bar_pct: 100.0 * count as f64 / max,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_a_person_writes_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(usd(0.0021), "$0.0021");
        assert_eq!(usd(0.61), "$0.6100");
        assert_eq!(usd(1234.567), "$1,234.57");
        assert_eq!(usd(3.0), "$3.00");
    }
}
