//! kjit's runtime: the [`Device`] interface, kjit's software GCN device, and (feature `hip`) the
//! HIP device for machines with an AMD GPU; [`default_device`] picks between them.
#![deny(missing_docs)]

pub mod args;
pub mod choose;
pub mod device;
pub mod emu;
#[cfg(feature = "hip")]
pub mod hip;
pub mod kernarg;
pub mod timing;

pub use args::check_args;
pub use choose::{
    default_device, device_for, open_device, try_default_device, ChosenDevice, DeviceKind,
    SharedDevice,
};
pub use device::{
    ArgValue, Device, DeviceBuffer, DeviceError, DeviceResult, LaunchDims, LaunchStats, ModuleId,
};
