// Package imagefolder keeps a cluster's nodes in step with its images
// folder, <state>/images: the design of k3s's auto-import of images, done
// with a keyed workqueue.
//
// What the folder holds:
//   - image tarballs (.tar, .tar.gz, .tgz, .tar.zst, .tzst): docker-archive
//     ("docker save") or OCI layout archives, imported with containerd's Go
//     client (containerd.Import);
//   - image lists (.txt): one image reference per line, '#' starts a
//     comment, blank lines are ignored; each is pulled through CRI on every
//     node that lacks it (as imagePullPolicy IfNotPresent), from the
//     registries containerd is configured for
//     (<state>/registries/<host>/hosts.toml).
//
// Other files, and names starting with '.', are ignored.
//
// Every image a file provides is pinned (so the kubelet never garbage
// collects it: no registry is reachable to pull it back) and labelled with
// its source, SourceLabel "folder:<file name>". Removing the file unpins
// the images no other file in the folder provides and drops their source
// label; the images themselves stay until removed by hand (crictl rmi).
//
// How: a Folder watches the directory with fsnotify. Each event only adds
// the file's name to a delaying, rate-limited workqueue (client-go's), so
// the event loop never waits for an import and many events for one file
// collapse into one key. Workers take keys from the queue: a file whose
// size or mtime is still changing is put back until it has settled (left
// unchanged for Options.Settle), then imported into every node that lacks
// that version, in parallel. A failure is retried with the queue's
// exponential backoff and logged with the file's name; it never stops the
// watch. The watch itself is re-established when it fails or the folder is
// removed and created again, and the folder is rescanned then and
// periodically, so no change goes unnoticed.
//
// What was imported (per file and node: the file's size and mtime, the
// images and their digests, how often) is recorded in a JSON file in the
// state dir, written atomically, so an unchanged file is not imported again
// when the cluster restarts. A node that starts calls SyncNode, which
// imports what that node lacks before its kubelet starts.
package imagefolder
