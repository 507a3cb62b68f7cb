//! The optional adapter features: which ones a device is opened with (only those the code uses),
//! and which path the backend takes on an adapter that has or lacks each (`devices -v`).

use crate::tree::FeaturePath;

/// Timestamp queries in compute passes and in command encoders: the code writes both (pass
/// timestamps around the hashing passes, encoder timestamps around copies), so it asks for them
/// only together.
fn timestamps() -> ::wgpu::Features {
    ::wgpu::Features::TIMESTAMP_QUERY | ::wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
}

/// The features a device is opened with: only those the code uses, where the adapter has them.
/// Today that is the timestamp pair; the shaders need nothing beyond core WGSL.
pub(super) fn wanted_features(adapter: ::wgpu::Features) -> ::wgpu::Features {
    if adapter.contains(timestamps()) {
        timestamps()
    } else {
        ::wgpu::Features::empty()
    }
}

/// True when a device opened with `features` times its own work.
pub(super) fn has_timestamps(features: ::wgpu::Features) -> bool {
    features.contains(timestamps())
}

/// Which path a device on an adapter with `adapter` features, on `backend`, takes for each
/// optional feature the backend looks at; `timed`: the device was opened with timestamps.
pub(super) fn feature_paths(adapter: ::wgpu::Features, backend: ::wgpu::Backend, timed: bool) -> Vec<FeaturePath> {
    use ::wgpu::Features as F;
    let timestamp_path = if timed {
        "the device times its own passes and copies"
    } else if adapter.contains(F::TIMESTAMP_QUERY) {
        "in passes only, not in encoders: the wall clock times each phase"
    } else {
        "the wall clock times each phase"
    };
    let cache_path = match (adapter.contains(F::PIPELINE_CACHE), backend) {
        (true, _) => "not used: the shaders are compiled each time a device opens",
        (false, ::wgpu::Backend::Vulkan) => "the driver has none: the shaders are compiled each time a device opens",
        (false, _) => "Vulkan only: the shaders are compiled each time a device opens",
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
            feature: "pipeline cache",
            available: adapter.contains(F::PIPELINE_CACHE),
            used: false,
            path: cache_path.into(),
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
        assert_eq!(wanted_features(F::all()), timestamps());
        assert_eq!(wanted_features(F::TIMESTAMP_QUERY | F::SUBGROUP), F::empty());
        assert_eq!(wanted_features(F::empty()), F::empty());
        assert!(has_timestamps(wanted_features(F::all())));
        assert!(!has_timestamps(F::TIMESTAMP_QUERY));
    }

    #[test]
    fn every_adapter_gets_a_path_for_each_feature() {
        let names = |ps: &[FeaturePath]| ps.iter().map(|p| p.feature).collect::<Vec<_>>();
        let full = feature_paths(F::all(), ::wgpu::Backend::Vulkan, true);
        let bare = feature_paths(F::empty(), ::wgpu::Backend::Gl, false);
        assert_eq!(names(&full), names(&bare));
        assert!(full.iter().all(|p| p.available));
        assert!(bare.iter().all(|p| !p.available && !p.used));
        assert_eq!(full[0].to_string(), format!("timestamps: yes ({})", full[0].path));
        assert!(bare[0].path.contains("wall clock"));
        assert!(bare[1].path.starts_with("Vulkan only"));
        let lavapipe_like = feature_paths(F::TIMESTAMP_QUERY, ::wgpu::Backend::Vulkan, false);
        assert!(lavapipe_like[0].path.contains("passes only"));
        assert!(lavapipe_like[1].path.contains("the driver has none"));
    }
}
