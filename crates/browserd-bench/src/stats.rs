//! Percentiles and summaries of timing samples (nearest-rank, so every reported figure is a measured sample).

use serde::{Deserialize, Serialize};

/// The `p`-th percentile (0–100) of `samples` by the nearest-rank method; `None` when there are no samples or a
/// sample is NaN.
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    if samples.is_empty() || samples.iter().any(|s| s.is_nan()) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let p = p.clamp(0.0, 100.0);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.saturating_sub(1).min(sorted.len() - 1)])
}

/// p50/p95/min/max and the number of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// Fastest sample.
    pub min_ms: f64,
    /// Slowest sample.
    pub max_ms: f64,
    /// How many samples.
    pub runs: usize,
}

impl Summary {
    /// Summarises `samples` (milliseconds); `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        Some(Summary {
            p50_ms: round3(percentile(samples, 50.0)?),
            p95_ms: round3(percentile(samples, 95.0)?),
            min_ms: round3(percentile(samples, 0.0)?),
            max_ms: round3(percentile(samples, 100.0)?),
            runs: samples.len(),
        })
    }
}

/// Rounds to three decimals (microsecond resolution for milliseconds).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&samples, 50.0), Some(50.0));
        assert_eq!(percentile(&samples, 95.0), Some(95.0));
        assert_eq!(percentile(&samples, 100.0), Some(100.0));
        assert_eq!(percentile(&samples, 0.0), Some(1.0));
    }

    #[test]
    fn unsorted_and_small_inputs() {
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), Some(2.0));
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 95.0), Some(3.0));
        assert_eq!(percentile(&[7.5], 95.0), Some(7.5));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[1.0, f64::NAN], 50.0), None);
    }

    #[test]
    fn summary_reports_every_field() {
        let s = Summary::of(&[10.0, 30.0, 20.0, 40.0]).unwrap();
        assert_eq!((s.p50_ms, s.p95_ms, s.min_ms, s.max_ms, s.runs), (20.0, 40.0, 10.0, 40.0, 4));
        assert!(Summary::of(&[]).is_none());
    }
}
