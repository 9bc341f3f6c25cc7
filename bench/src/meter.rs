//! Timing: a throughput meter that counts whole messages between two clock readings, and a
//! latency recorder.

use std::time::{Duration, Instant};

/// How long to warm up and how long to measure, per measurement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub(crate) warmup: Duration,
    pub(crate) measure: Duration,
}

impl Window {
    /// Past this a measurement is declared stalled.
    pub(crate) fn limit(&self) -> Duration {
        self.warmup + self.measure * 4 + Duration::from_secs(10)
    }
}

/// Counts messages fully received. The clock is read every `stride` messages (every message
/// for large ones), and the rate is the messages between the first reading after the warmup
/// and the first reading past the window, over the time between those readings: no partial
/// message and no clock error enters it.
pub(crate) struct Meter {
    window: Window,
    stride: u64,
    created: Instant,
    n: u64,
    start: Option<(Instant, u64)>,
    end: Option<(Instant, u64)>,
}

/// A measured rate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rate {
    pub(crate) messages: u64,
    pub(crate) elapsed: Duration,
}

impl Rate {
    pub(crate) fn per_second(&self) -> f64 {
        self.messages as f64 / self.elapsed.as_secs_f64()
    }
}

impl Meter {
    pub(crate) fn new(window: Window, size: usize) -> Self {
        Self {
            window,
            stride: (65536 / size.max(1)).clamp(1, 64) as u64,
            created: Instant::now(),
            n: 0,
            start: None,
            end: None,
        }
    }

    /// One more message received whole; true once the window is over.
    pub(crate) fn tick(&mut self) -> bool {
        self.n += 1;
        if self.n % self.stride != 0 {
            return false;
        }
        let now = Instant::now();
        match self.start {
            None => {
                if now.duration_since(self.created) >= self.window.warmup {
                    self.start = Some((now, self.n));
                }
                false
            }
            Some((t0, _)) => {
                if now.duration_since(t0) >= self.window.measure {
                    self.end = Some((now, self.n));
                    true
                } else {
                    false
                }
            }
        }
    }

    /// Whether the window has opened (the warmup is over).
    pub(crate) fn started(&self) -> bool {
        self.start.is_some()
    }

    pub(crate) fn rate(&self) -> Option<Rate> {
        let ((t0, n0), (t1, n1)) = (self.start?, self.end?);
        Some(Rate {
            messages: n1 - n0,
            elapsed: t1 - t0,
        })
    }
}

/// Round trips recorded after the warmup, until the window is over.
pub(crate) struct Recorder {
    window: Window,
    created: Instant,
    start: Option<Instant>,
    samples: Vec<u64>,
}

/// Latency percentiles of one measurement, in microseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Latency {
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) samples: usize,
}

impl Recorder {
    pub(crate) fn new(window: Window) -> Self {
        Self {
            window,
            created: Instant::now(),
            start: None,
            samples: Vec::with_capacity(1 << 16),
        }
    }

    /// One round trip that began at `began`; true once the window is over.
    pub(crate) fn record(&mut self, began: Instant) -> bool {
        let now = Instant::now();
        match self.start {
            None => {
                if now.duration_since(self.created) >= self.window.warmup {
                    self.start = Some(now);
                }
                false
            }
            Some(t0) => {
                self.samples.push((now - began).as_nanos() as u64);
                now.duration_since(t0) >= self.window.measure
            }
        }
    }

    /// Whether the window has opened (the warmup is over).
    pub(crate) fn started(&self) -> bool {
        self.start.is_some()
    }

    pub(crate) fn latency(mut self) -> Option<Latency> {
        if self.samples.is_empty() {
            return None;
        }
        self.samples.sort_unstable();
        let at = |q: f64| {
            let i =
                ((self.samples.len() as f64 * q).ceil() as usize).clamp(1, self.samples.len()) - 1;
            self.samples[i] as f64 / 1000.0
        };
        Some(Latency {
            p50_us: at(0.50),
            p99_us: at(0.99),
            samples: self.samples.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut r = Recorder::new(Window {
            warmup: Duration::ZERO,
            measure: Duration::from_secs(1),
        });
        r.samples = (1..=100).map(|us| us * 1000).collect();
        let l = r.latency().unwrap();
        assert_eq!(l.p50_us, 50.0);
        assert_eq!(l.p99_us, 99.0);
    }

    #[test]
    fn stride_reads_the_clock_every_message_for_large_bodies() {
        let w = Window {
            warmup: Duration::ZERO,
            measure: Duration::ZERO,
        };
        assert_eq!(Meter::new(w, 64).stride, 64);
        assert_eq!(Meter::new(w, 1024).stride, 64);
        assert_eq!(Meter::new(w, 65536).stride, 1);
        let mut m = Meter::new(w, 1 << 20);
        assert!(!m.tick()); // starts the window
        assert!(m.tick()); // a zero-length window ends at the next reading
        assert_eq!(m.rate().unwrap().messages, 1);
    }
}
