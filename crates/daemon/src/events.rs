//! The daemon's event log: numbered events kept in a ring for `?since=N` replays, and a
//! broadcast channel for live followers.
//!
//! Ids increase by one per event and start above the last id of the previous run (kept
//! in the node directory), so a client resuming with `since` after a restart never
//! mistakes new events for ones it has seen.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::broadcast;

/// Events kept for replay.
const RING: usize = 4096;

/// One event as served.
#[derive(Debug, Clone, Serialize)]
pub struct Logged {
    pub id: u64,
    /// `bundle`, `delivered`, `peer`, `reconciled`, `link`.
    pub kind: &'static str,
    /// Unix milliseconds.
    pub at_ms: u64,
    pub data: serde_json::Value,
}

#[derive(Debug)]
struct Inner {
    next: u64,
    ring: VecDeque<Arc<Logged>>,
}

/// See the module docs.
#[derive(Debug)]
pub struct EventLog {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Logged>>,
    mark: Option<PathBuf>,
}

/// Ids are reserved in blocks written to the mark file, so a restart (even after
/// `kill -9`) continues above every id ever served without a write per event.
const BLOCK: u64 = 1 << 16;

impl EventLog {
    /// A log whose ids continue from the mark file at `mark` (created if missing).
    pub fn new(mark: Option<PathBuf>) -> EventLog {
        let start = mark
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let (tx, _) = broadcast::channel(1024);
        let log = EventLog {
            inner: Mutex::new(Inner {
                next: start + 1,
                ring: VecDeque::new(),
            }),
            tx,
            mark,
        };
        log.reserve(start + 1);
        log
    }

    fn reserve(&self, from: u64) {
        if let Some(p) = &self.mark
            && let Err(e) = std::fs::write(p, (from + BLOCK).to_string())
        {
            tracing::warn!(path = %p.display(), "saving the event id mark: {e}");
        }
    }

    /// Records an event and wakes followers; returns its id.
    pub fn publish(&self, kind: &'static str, data: serde_json::Value) -> u64 {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let id = g.next;
        g.next += 1;
        if id.is_multiple_of(BLOCK) {
            self.reserve(id);
        }
        let e = Arc::new(Logged {
            id,
            kind,
            at_ms,
            data,
        });
        g.ring.push_back(e.clone());
        if g.ring.len() > RING {
            g.ring.pop_front();
        }
        // No receivers is fine: nobody is following.
        let _ = self.tx.send(e);
        id
    }

    /// Events after `since` still in the ring, and a receiver for every later one (taken
    /// under the same lock, so nothing falls between the two).
    pub fn follow(&self, since: u64) -> (Vec<Arc<Logged>>, broadcast::Receiver<Arc<Logged>>) {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let past = g.ring.iter().filter(|e| e.id > since).cloned().collect();
        (past, self.tx.subscribe())
    }

    /// The id the next event will get.
    pub fn next_id(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn replay_then_follow_without_gaps() {
        let log = EventLog::new(None);
        let a = log.publish("bundle", serde_json::json!({"n": 1}));
        let b = log.publish("bundle", serde_json::json!({"n": 2}));
        assert_eq!(b, a + 1);
        let (past, mut rx) = log.follow(a);
        assert_eq!(past.iter().map(|e| e.id).collect::<Vec<_>>(), vec![b]);
        let c = log.publish("peer", serde_json::json!({}));
        assert_eq!(rx.recv().await.unwrap().id, c);
    }

    #[test]
    fn ids_continue_above_a_previous_run() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("events.mark");
        let first = {
            let log = EventLog::new(Some(mark.clone()));
            (0..10)
                .map(|_| log.publish("bundle", serde_json::Value::Null))
                .last()
                .unwrap()
        };
        let log = EventLog::new(Some(mark));
        assert!(log.publish("bundle", serde_json::Value::Null) > first);
    }

    #[test]
    fn the_ring_is_bounded() {
        let log = EventLog::new(None);
        for _ in 0..RING + 10 {
            log.publish("bundle", serde_json::Value::Null);
        }
        let (past, _) = log.follow(0);
        assert_eq!(past.len(), RING);
    }
}
