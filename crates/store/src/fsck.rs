//! `fsck`: re-verify everything stored, quarantine damage, remove orphans.

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::path::Path;

use skywave_bundle::{JournalState, PayloadHasher, SignedManifest};

use crate::error::{Result, io_err};
use crate::{Store, to_hash};

/// id, manifest, inline payload, journal state.
type BundleRow = (Vec<u8>, Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

/// Manifests whose signatures `fsck` checks together.
const FSCK_BATCH: usize = 64;

/// What `fsck` found and did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct FsckReport {
    pub bundles_checked: u64,
    /// Bundles moved to `quarantine/` (their rows removed), with the reason.
    pub quarantined: Vec<(String, String)>,
    /// Files no row referenced (left by interrupted writes), removed.
    pub orphans_removed: u64,
    /// Transfers whose recorded ranges were no longer backed by a file, reset.
    pub partials_reset: u64,
}

impl FsckReport {
    pub fn is_clean(&self) -> bool {
        self.quarantined.is_empty() && self.partials_reset == 0
    }
}

impl Store {
    /// Re-checks every manifest signature and payload hash, moves damaged bundles to
    /// `quarantine/`, removes orphan files and resets transfers that lost their bytes.
    pub fn fsck(&mut self) -> Result<FsckReport> {
        self.settle();
        self.checkpoint()?;
        self.partials.clear();
        let mut report = FsckReport::default();
        let rows: Vec<BundleRow> = {
            let mut stmt = self
                .conn
                .prepare("SELECT id, manifest, inline, jstate FROM bundles")
                .map_err(|e| self.db(e))?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .map_err(|e| self.db(e))?
                .collect::<rusqlite::Result<_>>()
                .map_err(|e| self.db(e))?
        };
        let mut live_payloads = HashSet::new();
        let mut live_journals = HashSet::new();
        // Signatures are checked a chunk at a time (see `SignedManifest::decode_many`).
        let decoded = rows.chunks(FSCK_BATCH).flat_map(|chunk| {
            SignedManifest::decode_many(&chunk.iter().map(|r| r.1.as_slice()).collect::<Vec<_>>())
        });
        for ((id_bytes, mbytes, inline, jstate), decoded) in rows.iter().zip(decoded) {
            let (id_bytes, mbytes) = (id_bytes.as_slice(), mbytes.as_slice());
            report.bundles_checked += 1;
            let id_hex = hex::encode(id_bytes);
            let problem = match decoded {
                Err(e) => Some(format!("manifest: {e}")),
                Ok(signed) => {
                    let m = signed.manifest();
                    if m.id.as_bytes().as_slice() != id_bytes {
                        Some("manifest belongs to another bundle id".into())
                    } else {
                        let res =
                            self.verify_payload(&signed, inline.as_deref(), jstate.as_deref());
                        if res.is_none() && inline.is_none() && m.length > 0 {
                            if m.journal {
                                live_journals.insert(m.id.to_hex());
                            } else {
                                live_payloads.insert(m.hash.to_hex());
                            }
                        }
                        res
                    }
                }
            };
            if let Some(reason) = problem {
                tracing::warn!(bundle = %id_hex, "fsck: quarantining: {reason}");
                self.quarantine(id_bytes, mbytes, inline.as_deref())?;
                report.quarantined.push((id_hex, reason));
            }
        }
        // Partial transfers: the manifest must verify and the file must exist.
        let partials: Vec<(Vec<u8>, Vec<u8>)> = {
            let mut stmt = self
                .conn
                .prepare("SELECT id, manifest FROM partials")
                .map_err(|e| self.db(e))?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(|e| self.db(e))?
                .collect::<rusqlite::Result<_>>()
                .map_err(|e| self.db(e))?
        };
        let mut live_partials = HashSet::new();
        for (id, mbytes) in partials {
            let ok = SignedManifest::decode(&mbytes).ok().filter(|s| {
                let m = s.manifest();
                let path = if m.journal {
                    self.journal_path(&m.id)
                } else {
                    self.partial_path_hex(&m.id.to_hex())
                };
                path.exists()
            });
            match ok {
                Some(s) if s.manifest().journal => {
                    live_journals.insert(s.id().to_hex());
                }
                Some(s) => {
                    live_partials.insert(s.id().to_hex());
                }
                None => {
                    self.conn
                        .execute("DELETE FROM partials WHERE id = ?1", [&id])
                        .map_err(|e| self.db(e))?;
                    report.partials_reset += 1;
                }
            }
        }
        report.orphans_removed += remove_unlisted(&self.dir.join("tmp"), &HashSet::new())?;
        report.orphans_removed += remove_unlisted(&self.dir.join("partial"), &live_partials)?;
        report.orphans_removed += remove_unlisted(&self.dir.join("journals"), &live_journals)?;
        let payloads = self.dir.join("payloads");
        if let Ok(rd) = fs::read_dir(&payloads) {
            for sub in rd.flatten() {
                report.orphans_removed += remove_unlisted(&sub.path(), &live_payloads)?;
            }
        }
        Ok(report)
    }

    fn partial_path_hex(&self, hex: &str) -> std::path::PathBuf {
        self.dir.join("partial").join(hex)
    }

    /// `None` when the payload matches the manifest, else what is wrong.
    fn verify_payload(
        &self,
        signed: &SignedManifest,
        inline: Option<&[u8]>,
        jstate: Option<&[u8]>,
    ) -> Option<String> {
        let m = signed.manifest();
        let mut h = PayloadHasher::new();
        if let Some(data) = inline {
            h.update(data);
        } else if m.length > 0 {
            let path = if m.journal {
                self.journal_path(&m.id)
            } else {
                self.payload_path(&to_hash(&m.hash.0)?)
            };
            let f = match fs::File::open(&path) {
                Ok(f) => f,
                Err(e) => return Some(format!("payload file {}: {e}", path.display())),
            };
            let mut buf = vec![0u8; 256 * 1024];
            let mut r = f.take(m.length);
            loop {
                match r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => h.update(&buf[..n]),
                    Err(e) => return Some(format!("reading payload: {e}")),
                }
            }
        }
        if h.len() != m.length {
            return Some(format!(
                "payload is {} bytes, manifest says {}",
                h.len(),
                m.length
            ));
        }
        if h.finalize() != m.hash {
            return Some("payload hash does not match the manifest".into());
        }
        if m.journal {
            match jstate.map(JournalState::decode) {
                Some(Ok(s)) if s.len() == m.length && s.finalize() == m.hash => {}
                _ => return Some("journal hash state does not match the payload".into()),
            }
        }
        None
    }

    fn quarantine(&mut self, id: &[u8], manifest: &[u8], inline: Option<&[u8]>) -> Result<()> {
        let qdir = self.dir.join("quarantine");
        let name = hex::encode(id);
        let mpath = qdir.join(format!("{name}.manifest"));
        fs::write(&mpath, manifest).map_err(|e| io_err("write quarantine", &mpath, e))?;
        if let Some(data) = inline {
            let p = qdir.join(format!("{name}.payload"));
            fs::write(&p, data).map_err(|e| io_err("write quarantine", &p, e))?;
        } else if let Ok(signed) = SignedManifest::decode(manifest) {
            let m = signed.manifest();
            let src = if m.journal {
                self.journal_path(&m.id)
            } else {
                self.payload_path(&m.hash)
            };
            // Copy, not move: another bundle may share a content-addressed file.
            let _ = fs::copy(&src, qdir.join(format!("{name}.payload")));
        }
        if let Ok(id) = <[u8; 32]>::try_from(id) {
            crate::schema::delete_bundle(&self.conn, &skywave_bundle::BundleId(id))
                .map_err(|e| self.db(e))?;
        }
        Ok(())
    }
}

/// Removes files in `dir` whose names are not in `keep`; returns how many.
fn remove_unlisted(dir: &Path, keep: &HashSet<String>) -> Result<u64> {
    let mut n = 0;
    let Ok(rd) = fs::read_dir(dir) else {
        return Ok(0);
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_file() && !keep.contains(&name) {
            fs::remove_file(e.path()).map_err(|err| io_err("remove orphan", e.path(), err))?;
            n += 1;
        }
    }
    Ok(n)
}
