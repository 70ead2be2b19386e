//! Summaries of repeated measurements: median, min and max over runs, and percentiles of
//! latency samples.

use serde::Serialize;

/// A figure over repeated runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Summary {
    /// The median (the headline figure).
    pub median: f64,
    /// The smallest run; absent where the source reports only a median.
    pub min: Option<f64>,
    /// The largest run; absent where the source reports only a median.
    pub max: Option<f64>,
    /// How many runs it summarises (0 when unknown).
    pub runs: usize,
}

impl Summary {
    /// Median, min and max of `values`; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Summary {
            median,
            min: Some(v[0]),
            max: Some(v[n - 1]),
            runs: n,
        })
    }

    /// A single figure reported by someone else without a spread.
    pub fn single(median: f64) -> Summary {
        Summary {
            median,
            min: None,
            max: None,
            runs: 0,
        }
    }
}

/// The `p`-th percentile (0..=100) of `sorted` by the nearest-rank method.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The least-squares slope of `ys` over `xs` (how much y grows per unit of x); `None` with
/// fewer than two points or when every x is the same.
pub fn slope(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let n = xs.len().min(ys.len());
    if n < 2 {
        return None;
    }
    let mx = xs[..n].iter().sum::<f64>() / n as f64;
    let my = ys[..n].iter().sum::<f64>() / n as f64;
    let (num, den) = xs[..n]
        .iter()
        .zip(&ys[..n])
        .fold((0.0, 0.0), |(num, den), (x, y)| {
            (num + (x - mx) * (y - my), den + (x - mx) * (x - mx))
        });
    (den > 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    #[test]
    fn slope_of_a_line_and_of_noise_around_flat() {
        use super::slope;
        assert_eq!(slope(&[0.0, 1.0, 2.0], &[5.0, 7.0, 9.0]), Some(2.0));
        assert_eq!(
            slope(&[1.0, 2.0, 3.0, 4.0], &[3.0, 1.0, 3.0, 1.0]),
            Some(-0.4)
        );
        assert_eq!(slope(&[1.0], &[1.0]), None);
        assert_eq!(slope(&[2.0, 2.0], &[1.0, 3.0]), None);
    }

    use super::*;

    #[test]
    fn median_min_max() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (s.median, s.min, s.max, s.runs),
            (2.0, Some(1.0), Some(3.0), 3)
        );
        assert_eq!(Summary::of(&[1.0, 2.0, 3.0, 10.0]).unwrap().median, 2.5);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
    }
}
