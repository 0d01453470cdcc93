"""The fault families, one module each: their kinds' declarations, properties and behaviour
(:mod:`pytest_streamchaos.faults.kind`). The registry (:mod:`pytest_streamchaos.faults.registry`)
lists them."""
