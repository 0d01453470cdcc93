"""A one-node Kubernetes for Spark on Kubernetes, built from the Go module proxy (issue 51).

So far only its binaries (:mod:`.build`: ``python -m pytest_streamchaos.prepare --for k8s``); no cluster runs
yet, so no cluster manager names it. docs/kubernetes.md says what was measured.
"""
