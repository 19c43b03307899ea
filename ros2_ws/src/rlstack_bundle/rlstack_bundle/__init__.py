"""rlstack_bundle: the policy bundle, the one seam between training and serving.

* :mod:`rlstack_bundle.bundle`: the bundle folder format, loader and validator (``load``,
  ``Bundle``, ``BundleError``; CLI ``python -m rlstack_bundle validate|info``);
* :mod:`rlstack_bundle.terms`: the IO descriptor (``io.yaml``): observation and action terms;
* :mod:`rlstack_bundle.images`: image observation terms (``image_observation``): the one
  preprocessing (decode, crop, area resize, channels first) and stacking by stamp of camera
  frames, shared by the pixel envs and the policy node;
* :mod:`rlstack_bundle.derive`: the machine-readable ``derive`` operations of observation terms,
  evaluated by the training envs and the policy node alike;
* :mod:`rlstack_bundle.frames`: quaternion / TF-chain math (used by ``derive`` and the mission).

Training (workstation side, ``rlstack_learning``) writes bundles; the policy node and the mission
(robot side) read them. Neither side imports the other; both import this package, which needs
numpy, PyYAML and onnxruntime only (onnxruntime is imported when a bundle is loaded).
Importing the package imports nothing but itself: use the submodules.
"""

__all__ = ["bundle", "derive", "frames", "images", "terms"]
