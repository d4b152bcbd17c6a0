"""AdSent: sentiment-neutral rewriting before the veracity judgment.

See README.md in this folder for what we know of AdSent, what we chose and the deviations.
"""

from veracity.methods.adsent.method import AdSentConfig, AdSentMethod

__all__ = ["AdSentConfig", "AdSentMethod"]
