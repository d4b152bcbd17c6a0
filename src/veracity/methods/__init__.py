"""Fact-checking methods: the protocol, the baselines and one package per paper."""

from veracity.methods.base import BaseMethod, Method, MethodConfig, load_method, method_info

__all__ = ["BaseMethod", "Method", "MethodConfig", "load_method", "method_info"]
