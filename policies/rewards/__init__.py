"""Vision-language rewards: a CLIP reward model (VLM-RM), a VecEnv wrapper that
rewards rendered frames in batches, captions of simulator states, contrastive
training of a small local CLIP model, and reward evaluation. See docs/vlm_rewards.md."""
