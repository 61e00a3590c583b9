"""The volume controllers of the controller manager (upstream: pkg/controller/volume): the PersistentVolume
binder (`persistentvolume/`), the PVC and PV protection controllers, and the simulated local-path provisioner that
stands in for the one k3s ships."""
