//! Errors of the builder: every misuse is recorded with the call site that caused it and
//! reported by [`crate::KernelBuilder::finish`], never a panic.

use std::fmt;
use std::panic::Location;

/// One misuse, with where it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    /// The builder call, e.g. `store` or `mul`.
    pub call: String,
    /// `file:line:column` of the call in the kernel's source, when known.
    pub site: Option<String>,
    /// What was wrong.
    pub message: String,
}

impl BuildError {
    pub(crate) fn at(
        call: &str,
        site: Option<&'static Location<'static>>,
        message: String,
    ) -> Self {
        BuildError {
            call: call.to_string(),
            site: site.map(|l| l.to_string()),
            message,
        }
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.site {
            Some(s) => write!(f, "{s}: `{}`: {}", self.call, self.message),
            None => write!(f, "`{}`: {}", self.call, self.message),
        }
    }
}

/// Everything that was wrong with a kernel, as returned by `finish`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct KernelError {
    /// The kernel's name.
    pub kernel: String,
    /// The misuses, in the order they happened.
    pub errors: Vec<BuildError>,
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel `{}`: ", self.kernel)?;
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                write!(f, "; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}
