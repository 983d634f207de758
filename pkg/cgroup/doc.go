// Package cgroup is the host's cgroup file system as kubernix uses it:
// the layout (Detect: v1, hybrid or v2 and which controllers are mounted),
// the mount points of every hierarchy (Mounts), and a node's cgroups in
// all of them (Ensure, Remove, Existing, PIDs, RemoveEmpty). Mount points
// come from /proc/self/mountinfo (moby/sys/mountinfo), /proc/cgroups from
// prometheus/procfs.
package cgroup
