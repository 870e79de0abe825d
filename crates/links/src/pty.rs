//! A null-modem cable between two pseudo-terminals: two drivers (or two daemons) on one
//! machine talk as if their serial ports were wired together. The cable can be unplugged
//! and plugged back, and noise injected, to exercise a driver's recovery.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};

use crate::device::Pty;

enum Cmd {
    Inject(usize, Vec<u8>, oneshot::Sender<()>),
    Unplug(oneshot::Sender<()>),
    Plug(oneshot::Sender<io::Result<()>>),
}

/// Two ptys joined back to back. Each end is reached through a symlink that stays put
/// while the ptys behind it are replaced (as a USB serial device comes back at the same
/// udev name).
#[derive(Debug)]
pub struct NullModem {
    paths: [PathBuf; 2],
    cmd: mpsc::Sender<Cmd>,
    carried: Arc<AtomicU64>,
}

impl NullModem {
    /// Creates the ptys and the symlinks `dir/a` and `dir/b`, and starts carrying bytes.
    /// Needs a tokio runtime.
    pub fn open(dir: &Path) -> io::Result<NullModem> {
        let paths = [dir.join("a"), dir.join("b")];
        let ptys = plug(&paths)?;
        let (cmd, rx) = mpsc::channel(16);
        let carried = Arc::new(AtomicU64::new(0));
        tokio::spawn(run(ptys, paths.clone(), rx, carried.clone()));
        Ok(NullModem {
            paths,
            cmd,
            carried,
        })
    }

    /// The device path of end 0 or 1.
    pub fn path(&self, end: usize) -> &Path {
        &self.paths[end.min(1)]
    }

    /// Bytes carried end to end so far (both directions).
    pub fn carried(&self) -> u64 {
        self.carried.load(Ordering::Relaxed)
    }

    /// Writes `bytes` to end `end`'s reader, as line noise would; returns once they are
    /// written, so that whatever the cable carries next arrives after them.
    pub async fn inject(&self, end: usize, bytes: Vec<u8>) {
        let (tx, rx) = oneshot::channel();
        if self
            .cmd
            .send(Cmd::Inject(end.min(1), bytes, tx))
            .await
            .is_ok()
        {
            let _ = rx.await;
        }
    }

    /// Closes both ptys and removes the symlinks: the ends read end-of-file and cannot
    /// reopen until [`NullModem::plug`].
    pub async fn unplug(&self) {
        let (tx, rx) = oneshot::channel();
        if self.cmd.send(Cmd::Unplug(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// New ptys behind the same symlinks.
    pub async fn plug(&self) -> io::Result<()> {
        let (tx, rx) = oneshot::channel();
        self.cmd
            .send(Cmd::Plug(tx))
            .await
            .map_err(|_| io::Error::other("the null modem task has stopped"))?;
        rx.await
            .map_err(|_| io::Error::other("the null modem task has stopped"))?
    }
}

fn plug(paths: &[PathBuf; 2]) -> io::Result<[Arc<Pty>; 2]> {
    let ptys = [Arc::new(Pty::open()?), Arc::new(Pty::open()?)];
    for (p, link) in ptys.iter().zip(paths) {
        let _ = std::fs::remove_file(link);
        std::os::unix::fs::symlink(&p.path, link)?;
    }
    Ok(ptys)
}

async fn run(
    ptys: [Arc<Pty>; 2],
    paths: [PathBuf; 2],
    mut cmd: mpsc::Receiver<Cmd>,
    carried: Arc<AtomicU64>,
) {
    let mut ptys = Some(ptys);
    let mut ba = vec![0u8; 4096];
    let mut bb = vec![0u8; 4096];
    loop {
        let Some(p) = ptys.clone() else {
            match cmd.recv().await {
                Some(Cmd::Plug(done)) => {
                    let r = plug(&paths).map(|p| ptys = Some(p));
                    let _ = done.send(r);
                }
                Some(Cmd::Unplug(done)) => {
                    let _ = done.send(());
                }
                Some(Cmd::Inject(_, _, done)) => {
                    let _ = done.send(());
                }
                None => return,
            }
            continue;
        };
        let (from, n) = tokio::select! {
            r = p[0].read(&mut ba) => (0, r),
            r = p[1].read(&mut bb) => (1, r),
            c = cmd.recv() => {
                match c {
                    Some(Cmd::Inject(end, bytes, done)) => {
                        let _ = p[end].write_all(&bytes).await;
                        let _ = done.send(());
                    }
                    Some(Cmd::Unplug(done)) => {
                        ptys = None;
                        drop(p);
                        for l in &paths {
                            let _ = std::fs::remove_file(l);
                        }
                        let _ = done.send(());
                    }
                    Some(Cmd::Plug(done)) => {
                        let _ = done.send(Ok(()));
                    }
                    None => return,
                }
                continue;
            }
        };
        match n {
            Ok(n) if n > 0 => {
                let buf = if from == 0 { &ba[..n] } else { &bb[..n] };
                carried.fetch_add(n as u64, Ordering::Relaxed);
                if let Err(e) = p[1 - from].write_all(buf).await {
                    tracing::debug!(error = %e, "null modem: write failed");
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "null modem: read failed");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}
