//! Choosing the device a launch runs on: the one named by `KJIT_DEVICE=emu|hip` when set, else
//! the HIP device when kjit is built with the `hip` feature and an AMD GPU of a targeted
//! architecture is present, otherwise kjit's software GCN device.
//!
//! The choice is quiet: it is said on stderr (once per process) only when `KJIT_VERBOSE` is set,
//! or when the HIP device this build could use was not available and the software device was
//! taken instead without the user asking for it. `kjit devices` always shows it.

use std::fmt;
use std::str::FromStr;
use std::sync::Once;

use crate::device::{Device, DeviceError, DeviceResult};
use crate::emu::GcnEmulator;

/// A device a user can ask for by name (`--device hip|emu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// An AMD GPU through the HIP runtime (feature `hip`).
    Hip,
    /// kjit's software GCN device.
    Emu,
}

impl FromStr for DeviceKind {
    type Err = String;
    fn from_str(s: &str) -> Result<DeviceKind, String> {
        match s {
            "hip" => Ok(DeviceKind::Hip),
            "emu" => Ok(DeviceKind::Emu),
            _ => Err(format!("unknown device '{s}' (expected 'hip' or 'emu')")),
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Hip => "hip",
            DeviceKind::Emu => "emu",
        })
    }
}

/// A device shared across threads.
pub type SharedDevice = Box<dyn Device + Send + Sync>;

/// The device that was chosen and why.
pub struct ChosenDevice {
    /// The device.
    pub device: SharedDevice,
    /// Which kind it is.
    pub kind: DeviceKind,
    /// One sentence: why this device (e.g. "no AMD GPU found: ...").
    pub reason: String,
    /// Whether this is the software device standing in for a HIP device this build could have
    /// used (built with `hip`, but no usable GPU) without the user asking for it.
    pub fallback: bool,
}

/// The environment variable that names the device: `emu` or `hip`.
pub const DEVICE_ENV: &str = "KJIT_DEVICE";
/// The environment variable that makes the device choice be said on stderr.
pub const VERBOSE_ENV: &str = "KJIT_VERBOSE";

/// The device kind `KJIT_DEVICE` names, if it is set; an unknown name is an error.
pub fn device_from_env() -> DeviceResult<Option<DeviceKind>> {
    match std::env::var(DEVICE_ENV) {
        Ok(v) if !v.is_empty() => v
            .parse()
            .map(Some)
            .map_err(|e| DeviceError::Unavailable(format!("{DEVICE_ENV}={v}: {e}"))),
        _ => Ok(None),
    }
}

/// Whether `KJIT_VERBOSE` asks for the device choice to be said.
pub fn verbose() -> bool {
    std::env::var(VERBOSE_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Opens the device of `kind`. Asking for HIP where it cannot be had (feature off, no GPU, an
/// architecture kjit does not target) is an error that says which.
pub fn open_device(kind: DeviceKind) -> DeviceResult<SharedDevice> {
    match kind {
        DeviceKind::Emu => Ok(Box::new(GcnEmulator::new())),
        DeviceKind::Hip => open_hip(),
    }
}

#[cfg(feature = "hip")]
fn open_hip() -> DeviceResult<SharedDevice> {
    Ok(Box::new(crate::hip::HipDevice::open()?))
}

#[cfg(not(feature = "hip"))]
fn open_hip() -> DeviceResult<SharedDevice> {
    Err(DeviceError::Unavailable(
        "the HIP device needs kjit built with the cargo feature `hip` (cargo build --features hip)"
            .to_string(),
    ))
}

/// Chooses without saying anything: HIP if it can be opened, else the software device, with the
/// reason.
pub fn choose_default_device() -> ChosenDevice {
    match open_hip() {
        Ok(device) => {
            let reason = format!("found {}", device.name());
            ChosenDevice {
                device,
                kind: DeviceKind::Hip,
                reason,
                fallback: false,
            }
        }
        Err(why) => {
            let why = match why {
                DeviceError::Unavailable(m) => m,
                other => other.to_string(),
            };
            ChosenDevice {
                device: Box::new(GcnEmulator::new()),
                kind: DeviceKind::Emu,
                reason: format!("using kjit's software GCN device: {why}"),
                fallback: cfg!(feature = "hip"),
            }
        }
    }
}

static SAID: Once = Once::new();

/// Says the choice on stderr, once per process, when asked (`KJIT_VERBOSE`) or on a fallback.
fn say(chosen: &ChosenDevice) {
    if verbose() || chosen.fallback {
        SAID.call_once(|| eprintln!("kjit: device {}: {}", chosen.kind, chosen.reason));
    }
}

/// The device `KJIT_DEVICE` names, or the default (see [`choose_default_device`]). Naming a
/// device that cannot be had, or an unknown one, is an error.
pub fn try_default_device() -> DeviceResult<ChosenDevice> {
    let chosen = match device_from_env()? {
        Some(kind) => ChosenDevice {
            device: open_device(kind).map_err(|e| match e {
                DeviceError::Unavailable(m) => {
                    DeviceError::Unavailable(format!("{DEVICE_ENV}={kind}: {m}"))
                }
                other => other,
            })?,
            kind,
            reason: format!("{DEVICE_ENV}={kind}"),
            fallback: false,
        },
        None => choose_default_device(),
    };
    say(&chosen);
    Ok(chosen)
}

/// Like [`try_default_device`], but a `KJIT_DEVICE` that cannot be had falls back to the default
/// choice, and that is said on stderr.
pub fn default_device() -> ChosenDevice {
    match try_default_device() {
        Ok(chosen) => chosen,
        Err(e) => {
            let mut chosen = choose_default_device();
            chosen.reason = format!("{e}; {}", chosen.reason);
            chosen.fallback = true;
            say(&chosen);
            chosen
        }
    }
}

/// The device the CLI runs on: the one asked for (`--device`), else the one `KJIT_DEVICE`
/// names, else the default.
pub fn device_for(kind: Option<DeviceKind>) -> DeviceResult<ChosenDevice> {
    match kind {
        None => try_default_device(),
        Some(kind) => {
            let device = open_device(kind)?;
            Ok(ChosenDevice {
                device,
                kind,
                reason: "asked for".to_string(),
                fallback: false,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No machine this project is tested on has an AMD GPU: the default must fall back to the
    /// software device and say why, and asking for HIP must be a clear error.
    #[test]
    fn without_a_gpu_the_default_is_the_software_device() {
        let chosen = choose_default_device();
        if chosen.kind == DeviceKind::Hip {
            eprintln!(
                "this machine has an AMD GPU ({}); fallback not exercised",
                chosen.reason
            );
            return;
        }
        assert_eq!(chosen.device.name(), "kjit GCN device (software)");
        assert!(
            chosen.reason.contains("software GCN device"),
            "{}",
            chosen.reason
        );
        if cfg!(feature = "hip") {
            assert!(chosen.reason.contains("no AMD GPU"), "{}", chosen.reason);
        } else {
            assert!(chosen.reason.contains("feature `hip`"), "{}", chosen.reason);
        }
        let err = open_device(DeviceKind::Hip)
            .err()
            .expect("HIP cannot be had here");
        assert!(matches!(err, DeviceError::Unavailable(_)), "{err}");
    }

    #[test]
    fn device_names_parse() {
        assert_eq!("hip".parse::<DeviceKind>(), Ok(DeviceKind::Hip));
        assert_eq!("emu".parse::<DeviceKind>(), Ok(DeviceKind::Emu));
        assert!("cuda"
            .parse::<DeviceKind>()
            .unwrap_err()
            .contains("unknown device"));
    }
}
