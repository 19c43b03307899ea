"""The parameter tables of the perception nodes, semantic_map and grasp_pose (pure Python, no rclpy).

Each node declares its table with ``rlstack_common.param_table.declare_all``; ``launch/params/``
and docs/reference/perception.md are checked against (the docs generated from) these tables.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Tuple

from rlstack_common.param_table import Param as P
from rlstack_perception.grasp_pose import GraspPoseConfig

__all__ = ["GRASP_CONFIG_FIELDS", "GRASP_POSE", "SEMANTIC_MAP", "make_embedder", "make_segmenter"]

_G = GraspPoseConfig()

SEMANTIC_MAP: List[P] = [
    P("rgb_topic", "/head_camera/image_raw", "RGB image topic (rgb8 or bgr8)"),
    P("depth_topic", "/head_camera/depth/image_raw", "Registered depth (32FC1 m, 16UC1 mm)"),
    P("camera_info_topic", "/head_camera/camera_info", "CameraInfo of both images"),
    P("map_frame", "odom", "Frame of the map (object positions); must be in TF"),
    P("update_rate_hz", 10.0, "Map updates per second at most, Hz", 0.1, 100.0),
    P("tf_wait_s", 0.5, "A frame whose pose /tf has not reached yet waits this long (node clock) before it is "
      "skipped, as tf2's MessageFilter holds a message, s", 0.0, 10.0),
    P("max_stamp_skew_s", 0.02, "RGB/depth stamps closer than this are one frame, s", 0.0, 1.0),
    P("segmenter", "depth_plane", "Segmenter", constraints="one of: depth_plane, sam"),
    P("sam_checkpoint", "", "SAM checkpoint path (segmenter: sam)"),
    P("sam_model_type", "vit_b", "SAM model type", constraints="one of: vit_b, vit_l, vit_h, vit_t (MobileSAM)"),
    P("embedder", "crop_cnn", "Embedder", constraints="one of: crop_cnn, clip"),
    P("embedder_path", "", "ONNX weights of the crop embedder ('' = packaged weights)"),
    P("clip_checkpoint", "", "open_clip checkpoint path (embedder: clip)"),
    P("clip_model", "ViT-B-32", "open_clip model name (embedder: clip)"),
    P("threads", 1, "onnxruntime / torch threads", 1, 64),
    P("query_head", True, "Score queries with the query head (colour/shape compatibility; embedder crop_cnn only; "
      "false: cosine of the text and crop embeddings)"),
    P("query_head_path", "", "Query head weights (.npz; '' = packaged weights)"),
    P("colour_words", True, "Query head: read colour names through the xkcd colour survey"),
    P("shape_words", True, "Query head: accept a shape named by a WordNet synonym of a training shape word "
      "(column, globe, tube, ...)"),
    P("noun_words", "heads", "Query head: read the query's head noun through the WordNet noun table: heads (accept "
      "and reject), reject (a head noun that is-a thing not ours, 'the red goblet', matches nothing), accept (a "
      "noun that is-a training word of a kind names that kind: mallard -> duck), full (both, and 'tennis ball can' "
      "is a can, not a ball) or off; docs/reference/perception.md",
      constraints="one of: off, accept, reject, heads, full"),
    P("match_threshold", -1.0, "Queries return no match scoring below this ('not here'); -1: the query head's "
      "calibrated threshold, or none without the head (CLIP: set one)", -1.0, 1.0),
    P("sim_threshold", 0.75, "Embedding similarity to update an entry", -1.0, 1.0),
    P("gate_m", 0.25, "Spatial gate for association, m", 0.0, 10.0),
    P("max_objects", 500, "Map entries at most", 1, 100000),
    P("label_min_score", 0.5, "Min label similarity for a text label", -1.0, 1.0),
    P("snap_temperature", 200.0, "Query-time soft snap of embeddings onto label prototypes (0: raw embeddings)",
      0.0, 1000.0),
    P("colocated_m", 0.03, "Query head: entries closer than this are one object seen two ways: a query answers "
      "once, with the best-observed one (its labels, label and position), m (0: off)", 0.0, 1.0),
    P("merge_m", 0.10, "One object: a detection of an entry's colour this close to it updates it (whatever "
      "its shape reads), and entries of one colour this close merge into the one with more evidence; "
      "colours from the labels, so off without them, m (0: off)", 0.0, 1.0),
    P("min_area_px", 30, "Masks smaller than this are dropped, pixels", 1, 1000000),
    P("max_area_fraction", 0.5, "Masks larger than this image fraction are dropped", 0.0, 1.0),
    P("min_stability", 0.6, "Min mask stability score", 0.0, 1.0),
    P("min_valid_depth", 0.8, "Min fraction of mask pixels with depth", 0.0, 1.0),
    P("max_range_m", 6.0, "Detections further than this are dropped, m", 0.1, 100.0),
    P("map_file", "", "Map file for ~/save and ~/load ('' = disabled)"),
    P("load_on_start", False, "Load map_file at start (a corrupt file is set aside)"),
    P("autosave_period_s", 0.0, "Save map_file every this many seconds (0: off)", 0.0, 86400.0),
    P("publish_embeddings", False, "Fill SemanticObject.embedding in the map"),
    P("marker_text_size", 0.08, "Label text height in rviz, m", 0.001, 10.0),
    P("diagnostics_period_s", 1.0, "Diagnostics period, s", 0.05, 60.0),
    P("tf_cache_s", 10.0, "TF history kept, s", 0.5, 600.0),
    P("tf_max_extrapolation_s", 0.1, "TF extrapolation allowed, s", 0.0, 10.0),
]


def make_segmenter(v: Mapping[str, Any]) -> Any:
    """The segmenter that semantic_map's values choose (``segmenter``, ``sam_*``)."""
    kind = v["segmenter"]
    if kind == "depth_plane":
        from rlstack_perception.segment import DepthPlaneSegmenter

        return DepthPlaneSegmenter()
    if kind == "sam":
        from rlstack_perception.backends.sam import SamSegmenter

        return SamSegmenter.from_checkpoint(v["sam_checkpoint"], v["sam_model_type"])
    raise ValueError(f"unknown segmenter '{kind}' (depth_plane, sam)")


def make_embedder(v: Mapping[str, Any]) -> Tuple[Any, Any]:
    """(crop embedder, text encoder) that semantic_map's values choose (``embedder``, ``clip_*``, ``threads``)."""
    from rlstack_perception.embed import DEFAULT_EMBEDDER, OnnxCropEmbedder, TextEncoder

    kind, threads = v["embedder"], v["threads"]
    if kind == "crop_cnn":
        return OnnxCropEmbedder(v["embedder_path"] or DEFAULT_EMBEDDER, threads), TextEncoder()
    if kind == "clip":
        from rlstack_perception.backends.clip import ClipEmbedder

        emb = ClipEmbedder.from_checkpoint(v["clip_checkpoint"], v["clip_model"], threads=threads)
        return emb, TextEncoder(emb.encode_text)
    raise ValueError(f"unknown embedder '{kind}' (crop_cnn, clip)")


GRASP_POSE: List[P] = [
    P("depth_topic", "/head_camera/depth/image_raw", "Depth image (32FC1 m or 16UC1 mm)"),
    P("camera_info_topic", "/head_camera/camera_info", "CameraInfo of the depth image"),
    P("output_frame", "base_link", "Frame of the answers (z up)"),
    P("frames_kept", 5, "Newest depth frames kept (a request fuses up to this many)", 1, 30),
    P("max_frame_age_s", 1.0, "Frames older than this (by stamp, against the newest /tf) are not used, s", 0.05, 60.0),
    P("crop_radius", _G.crop_radius, "Points farther than this from the hint are ignored, m", 0.02, 2.0),
    P("object_radius", _G.object_radius, "Object points within this of the re-centred hint, m", 0.01, 1.0),
    P("min_height", _G.min_height, "Above the support by this much is the object, m", 0.0, 0.5),
    P("top_band", _G.top_band, "Top face: points within this of the top, m", 0.001, 0.1),
    P("min_object_points", _G.min_object_points, "Fewer object points: not visible", 3, 100000),
    P("far_edge_px", _G.far_edge_px, "Image rows of the top face's far edge the camera loses (2 for an RGB-D "
      "camera; 0.5 for exact simulated depth)", 0.0, 20.0),
    P("depth_sigma_0", _G.depth_sigma_0, "The camera's range noise at zero range (sigma = depth_sigma_0 + "
      "depth_k_r2 * range^2), m; the height thresholds widen to it", 0.0, 0.1),
    P("depth_k_r2", _G.depth_k_r2, "The camera's range noise growth with range squared, 1/m (RealSense D435: "
      "0.0025)", 0.0, 0.1),
    P("max_view_spread_m", 0.015, "Views farther apart than this disagree, m", 0.001, 1.0),
    P("max_view_spread_deg", 8.0, "Views whose yaws differ more than this disagree, deg", 0.5, 45.0),
    P("tf_cache_s", 10.0, "TF history kept, s", 0.5, 600.0),
    P("tf_max_extrapolation_s", 0.1, "TF extrapolation allowed, s", 0.0, 10.0),
]

#: grasp_pose parameters that are :class:`GraspPoseConfig` fields (the node builds the config from them)
GRASP_CONFIG_FIELDS = ("crop_radius", "object_radius", "min_height", "top_band", "min_object_points", "far_edge_px",
                       "depth_sigma_0", "depth_k_r2")
