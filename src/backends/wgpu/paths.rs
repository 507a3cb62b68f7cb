//! The optional adapter features: which ones a device is opened with (only those the code uses),
//! and which path the backend takes on an adapter that has or lacks each (`devices -v`).

use crate::tree::FeaturePath;
use std::path::Path;

/// Timestamp queries in compute passes and in command encoders: the code writes both (pass
/// timestamps around the hashing passes, encoder timestamps around copies), so it asks for them
/// only together.
fn timestamps() -> ::wgpu::Features {
    ::wgpu::Features::TIMESTAMP_QUERY | ::wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
}

/// The features a device is opened with: only those the code uses, where the adapter has them:
/// the timestamp pair, mappable storage buffers (see [`has_mapped_pieces`]), and the pipeline
/// cache when `cache` (caches are on and have a directory). The shaders need nothing beyond core
/// WGSL.
pub(super) fn wanted_features(adapter: ::wgpu::Features, cache: bool) -> ::wgpu::Features {
    let mut wanted = adapter & ::wgpu::Features::MAPPABLE_PRIMARY_BUFFERS;
    if adapter.contains(timestamps()) {
        wanted |= timestamps();
    }
    if cache {
        wanted |= adapter & ::wgpu::Features::PIPELINE_CACHE;
    }
    wanted
}

/// True when a device opened with `features` times its own work.
pub(super) fn has_timestamps(features: ::wgpu::Features) -> bool {
    features.contains(timestamps())
}

/// True when a device opened with `features` lets the last pass write its results where the host
/// maps them (`Scratch`: the pieces buffer is `STORAGE | MAP_READ`), with no copy after the
/// passes. wgpu warns that mappable storage "can severely hinder performance" on a discrete GPU:
/// that holds for bulk data in host memory, not for the few hundred bytes of CVs and the last
/// chunk written here (see `Scratch`).
pub(super) fn has_mapped_pieces(features: ::wgpu::Features) -> bool {
    features.contains(::wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
}

/// Which path a device on an adapter with `adapter` features, on `backend`, takes for each
/// optional feature the backend looks at; `timed`: the device was opened with timestamps;
/// `mapped`: its results are written where the host maps them; `cache_file`: the file its
/// pipeline cache is kept in, where it has one.
pub(super) fn feature_paths(
    adapter: ::wgpu::Features,
    backend: ::wgpu::Backend,
    timed: bool,
    mapped: bool,
    cache_file: Option<&Path>,
) -> Vec<FeaturePath> {
    use ::wgpu::Features as F;
    let timestamp_path = if timed {
        "the device times its own passes and copies"
    } else if adapter.contains(F::TIMESTAMP_QUERY) {
        "in passes only, not in encoders: the wall clock times each phase"
    } else {
        "the wall clock times each phase"
    };
    let cache_path = match (cache_file, adapter.contains(F::PIPELINE_CACHE), backend) {
        (Some(file), _, _) => format!("used: the compiled pipelines are kept in {}", file.display()),
        (None, true, _) => "not used (B3ACCEL_CACHE=off, or no cache directory): the shaders are compiled each \
                            time a device opens"
            .into(),
        (None, false, ::wgpu::Backend::Vulkan) => {
            "the driver has none: the shaders are compiled each time a device opens".into()
        }
        (None, false, _) => "Vulkan only: the shaders are compiled each time a device opens".into(),
    };
    let atomics = F::SHADER_INT64_ATOMIC_MIN_MAX | F::SHADER_INT64_ATOMIC_ALL_OPS;
    vec![
        FeaturePath {
            feature: "timestamps",
            available: adapter.contains(timestamps()),
            used: timed,
            path: timestamp_path.into(),
        },
        FeaturePath {
            feature: "mappable storage",
            available: adapter.contains(F::MAPPABLE_PRIMARY_BUFFERS),
            used: mapped,
            path: if mapped {
                "results read back where the last pass writes them: no copy after the passes"
            } else {
                "results copied into a mapped buffer after the passes (one copy)"
            }
            .into(),
        },
        FeaturePath {
            feature: "pipeline cache",
            available: adapter.contains(F::PIPELINE_CACHE),
            used: cache_file.is_some(),
            path: cache_path,
        },
        FeaturePath {
            feature: "subgroups",
            available: adapter.contains(F::SUBGROUP),
            used: false,
            path: "not needed: the shaders reduce the tree in workgroup memory".into(),
        },
        FeaturePath {
            feature: "64-bit atomics",
            available: adapter.intersects(atomics),
            used: false,
            path: "not needed: the shaders use 32-bit words and no atomics".into(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::wgpu::Features as F;

    #[test]
    fn only_used_features_are_requested() {
        let mapped = F::MAPPABLE_PRIMARY_BUFFERS;
        assert_eq!(wanted_features(F::all(), false), timestamps() | mapped);
        assert_eq!(wanted_features(F::all(), true), timestamps() | mapped | F::PIPELINE_CACHE);
        assert_eq!(wanted_features(mapped | F::SUBGROUP, false), mapped);
        assert!(has_mapped_pieces(wanted_features(F::all(), false)));
        assert!(!has_mapped_pieces(wanted_features(F::TIMESTAMP_QUERY, true)));
        assert_eq!(wanted_features(F::TIMESTAMP_QUERY | F::SUBGROUP, true), F::empty());
        assert_eq!(wanted_features(F::PIPELINE_CACHE, true), F::PIPELINE_CACHE);
        assert_eq!(wanted_features(F::empty(), true), F::empty());
        assert!(has_timestamps(wanted_features(F::all(), true)));
        assert!(!has_timestamps(F::TIMESTAMP_QUERY));
    }

    #[test]
    fn every_adapter_gets_a_path_for_each_feature() {
        let names = |ps: &[FeaturePath]| ps.iter().map(|p| p.feature).collect::<Vec<_>>();
        let file = Path::new("/cache/b3accel/wgpu-0123456789abcdef.bin");
        let full = feature_paths(F::all(), ::wgpu::Backend::Vulkan, true, true, Some(file));
        let bare = feature_paths(F::empty(), ::wgpu::Backend::Gl, false, false, None);
        assert_eq!(names(&full), names(&bare));
        assert!(full.iter().all(|p| p.available));
        assert!(full[1].used && full[1].path.contains("no copy"), "{}", full[1]);
        assert!(bare[1].path.contains("copied"), "{}", bare[1]);
        assert!(full[2].used && full[2].path.contains(&file.display().to_string()), "{}", full[2]);
        assert!(bare.iter().all(|p| !p.available && !p.used));
        let off = feature_paths(F::PIPELINE_CACHE, ::wgpu::Backend::Vulkan, false, false, None);
        assert!(off[2].available && !off[2].used && off[2].path.contains("B3ACCEL_CACHE=off"));
        assert_eq!(full[0].to_string(), format!("timestamps: yes ({})", full[0].path));
        assert!(bare[0].path.contains("wall clock"));
        assert!(bare[2].path.starts_with("Vulkan only"));
        let partial = feature_paths(F::TIMESTAMP_QUERY, ::wgpu::Backend::Vulkan, false, false, None);
        assert!(partial[0].path.contains("passes only"));
        assert!(partial[2].path.contains("the driver has none"));
    }
}
