"""Deployment: export, verify, quantize, run and serve trained models. Delete this folder for a training-only template.

Empty on purpose: importing ``litstarter.extras.deploy.infer`` must not import torch (ONNX inference runs without it).
"""
