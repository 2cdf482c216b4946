//! kjit's runtime: the [`Device`] interface, kjit's software GCN device, and (feature `hip`) the
//! HIP device for machines with an AMD GPU.
#![deny(missing_docs)]

pub mod device;
pub mod emu;

pub use device::{
    ArgValue, Device, DeviceBuffer, DeviceError, DeviceResult, LaunchDims, LaunchStats, ModuleId,
};
