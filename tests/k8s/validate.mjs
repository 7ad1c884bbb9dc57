#!/usr/bin/env node
// Validates Kubernetes objects against the official OpenAPI schema, through the validators
// npm `kubernetes-models` generates from it (the Kubernetes version is in docs/backends/k8s.md).
//
//   node tests/k8s/validate.mjs FILE...      (or - / nothing: standard input)
//
// A file holds one or more YAML documents ("---" between them) or JSON (one object, or a list
// of objects as `seedctl k8s render -o json` prints); a `kind: List` is read item by item.
// Each object is validated with the kubernetes-models class of its apiVersion and kind. Exit
// 0 when every object is valid; 1 with `FILE: KIND/NAME: schema error` lines when any is not
// (or when an object has no schema: an unknown apiVersion/kind is an error, never skipped).
// The packages live in tests/node_modules (scripts/npm-tests.sh), which Node finds from here.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { parseAllDocuments } from "yaml";

// "v1" -> kubernetes-models/v1; "apps/v1" -> kubernetes-models/apps/v1.
async function classFor(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") return null;
  let mod;
  try {
    mod = await import(`kubernetes-models/${apiVersion}`);
  } catch {
    return null;
  }
  const cls = mod[kind];
  return typeof cls === "function" && typeof cls.prototype.validate === "function" ? cls : null;
}

function objectsOf(text, file) {
  const out = [];
  const push = (o) => {
    if (Array.isArray(o)) o.forEach(push);
    else if (o && o.kind === "List" && Array.isArray(o.items)) o.items.forEach(push);
    else if (o !== null && o !== undefined) out.push(o);
  };
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors && doc.errors.length) {
      throw new Error(`${file}: not YAML/JSON: ${doc.errors[0].message}`);
    }
    push(doc.toJS());
  }
  return out;
}

//! Every object of `text` (named `file` in messages) validated: {valid, errors: ["KIND/NAME: ..."]}.
export async function validateText(text, file) {
  const errors = [];
  let valid = 0;
  let objects;
  try {
    objects = objectsOf(text, file);
  } catch (e) {
    return { valid, errors: [e.message] };
  }
  for (const obj of objects) {
    const name = `${obj.kind ?? "?"}/${obj.metadata?.name ?? "?"}`;
    const cls = await classFor(obj.apiVersion, obj.kind);
    if (!cls) {
      errors.push(`${file}: ${name}: no schema for apiVersion ${obj.apiVersion} kind ${obj.kind}`);
      continue;
    }
    try {
      new cls(obj).validate();
      valid++;
    } catch (e) {
      const details = (e.errors ?? []).map((x) => `${x.instancePath} ${x.message}`).join("; ");
      errors.push(`${file}: ${name}: ${details || e.message}`);
    }
  }
  return { valid, errors };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const files = process.argv.slice(2);
  if (files.length === 0) files.push("-");
  let bad = 0, checked = 0;
  for (const file of files) {
    const text = readFileSync(file === "-" ? 0 : file, "utf8");
    const r = await validateText(text, file === "-" ? "<stdin>" : file);
    r.errors.forEach((e) => console.error(e));
    bad += r.errors.length;
    checked += r.valid;
  }
  if (bad > 0) {
    console.error(`${bad} invalid object(s), ${checked} valid`);
    process.exit(1);
  }
  console.log(`${checked} object(s) valid`);
}
