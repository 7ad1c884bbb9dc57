#!/usr/bin/env python3
"""Writes an OCI image layout (an independent writer for the image tests): one image per
platform given, each with a gzip'd layer holding /etc/rsl-image (its platform and tag) and
any extra files (CONTENT @HOSTFILE: that file's bytes and mode); `--layer` starts another layer above it (a file named .wh.NAME is a
whiteout, .wh..wh..opq an opaque one). With several platforms, the tag names an image index
over them.

usage: make_oci_layout.py DIR TAG PLATFORM[,PLATFORM...] [PATH=CONTENT ...] [--layer PATH=CONTENT ...]
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile


def blob(root, data, media_type):
    digest = hashlib.sha256(data).hexdigest()
    os.makedirs(os.path.join(root, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(root, "blobs", "sha256", digest), "wb") as f:
        f.write(data)
    return {"mediaType": media_type, "digest": "sha256:" + digest, "size": len(data)}


def layer(files):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, content in sorted(files.items()):
            mode = 0o644
            if content.startswith("@"):  # a host file's bytes and mode: @/bin/busybox
                with open(content[1:], "rb") as f:
                    data = f.read()
                mode = os.stat(content[1:]).st_mode & 0o7777
            else:
                data = content.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = mode
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    raw = raw.getvalue()
    return raw, gzip.compress(raw, mtime=0)


def image(root, platform, tag, extra_layers):
    os_name, arch = platform.split("/")
    layer_descs, diff_ids = [], []
    for n, extra in enumerate(extra_layers):
        files = {"etc/rsl-image": platform + " " + tag + "\n"} if n == 0 else {}
        files.update(extra)
        raw, gz = layer(files)
        layer_descs.append(blob(root, gz, "application/vnd.oci.image.layer.v1.tar+gzip"))
        diff_ids.append("sha256:" + hashlib.sha256(raw).hexdigest())
    config = {
        "architecture": arch,
        "os": os_name,
        "config": {"Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }
    config_desc = blob(root, json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json")
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config_desc,
        "layers": layer_descs,
    }
    desc = blob(root, json.dumps(manifest).encode(), "application/vnd.oci.image.manifest.v1+json")
    desc["platform"] = {"architecture": arch, "os": os_name}
    return desc


def main():
    root, tag, platforms = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    layers = [{}]
    for arg in sys.argv[4:]:
        if arg == "--layer":
            layers.append({})
        else:
            path, content = arg.split("=", 1)
            layers[-1][path] = content
    descs = [image(root, p, tag, layers) for p in platforms]
    if len(descs) == 1:
        top = descs[0]
    else:
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": descs,
        }
        top = blob(root, json.dumps(index).encode(), "application/vnd.oci.image.index.v1+json")
    top = dict(top)
    top.pop("platform", None)
    top["annotations"] = {"org.opencontainers.image.ref.name": tag}
    with open(os.path.join(root, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with open(os.path.join(root, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [top]}, f)
    print(top["digest"])


if __name__ == "__main__":
    main()
