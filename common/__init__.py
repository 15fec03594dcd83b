"""Shared foundation: typed records, task schema, config, action grammar and prompt building.

Every other package imports from here; nothing here imports ray, vllm, deepspeed or playwright.
"""
