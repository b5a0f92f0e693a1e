"""Deployable policy files: ONNX (for onnxruntime, used by the ROS 2 layer) or
TorchScript, each with a metadata JSON next to it. Import the submodules
(``exporter``, ``onnx``, ``torchscript``) directly: this package's import stays
free of torch."""
