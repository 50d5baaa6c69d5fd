//! A tiny line-oriented key/value store, written for infill's tests.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum StoreError {
    Io(io::Error),
    BadLine { line: usize, text: String },
    Missing(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io(e) => write!(f, "i/o error: {}", e),
            StoreError::BadLine { line, text } => write!(f, "line {}: cannot parse {:?}", line, text),
            StoreError::Missing(key) => write!(f, "no key {}", key),
        }
    }
}

impl From<io::Error> for StoreError {
    fn from(e: io::Error) -> Self {
        StoreError::Io(e)
    }
}

pub struct Store {
    path: PathBuf,
    entries: BTreeMap<String, String>,
    dirty: bool,
}

impl Store {
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let mut entries = BTreeMap::new();
        if path.exists() {
            let file = fs::File::open(path)?;
            for (i, line) in io::BufReader::new(file).lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() || line.starts_with('#') {
                    continue;
                }
                let (key, value) = line
                    .split_once('=')
                    .ok_or_else(|| StoreError::BadLine { line: i + 1, text: line.clone() })?;
                entries.insert(key.trim().to_string(), value.trim().to_string());
            }
        }
        Ok(Store { path: path.to_path_buf(), entries, dirty: false })
    }

    pub fn get(&self, key: &str) -> Result<&str, StoreError> {
        self.entries
            .get(key)
            .map(|v| v.as_str())
            .ok_or_else(|| StoreError::Missing(key.to_string()))
    }

    pub fn set(&mut self, key: &str, value: &str) {
        let old = self.entries.insert(key.to_string(), value.to_string());
        self.dirty |= old.as_deref() != Some(value);
    }

    pub fn remove(&mut self, key: &str) -> bool {
        let removed = self.entries.remove(key).is_some();
        self.dirty |= removed;
        removed
    }

    pub fn save(&mut self) -> Result<(), StoreError> {
        if !self.dirty {
            return Ok(());
        }
        let tmp = self.path.with_extension("tmp");
        {
            let mut out = io::BufWriter::new(fs::File::create(&tmp)?);
            for (k, v) in &self.entries {
                writeln!(out, "{} = {}", k, v)?;
            }
            out.flush()?;
        }
        fs::rename(&tmp, &self.path)?;
        self.dirty = false;
        Ok(())
    }

    pub fn keys_with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        self.entries.keys().filter(move |k| k.starts_with(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_then_get() {
        let mut s = Store { path: PathBuf::from("/nonexistent"), entries: BTreeMap::new(), dirty: false };
        s.set("a", "1");
        assert_eq!(s.get("a").unwrap(), "1");
        assert!(s.dirty);
    }
}
