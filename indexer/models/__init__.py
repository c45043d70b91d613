"""Text → vectors: the embedding model (ONNX through onnxruntime) and the contract that says which vectors match."""
