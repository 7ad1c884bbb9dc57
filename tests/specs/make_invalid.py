#!/usr/bin/env python3
"""Writes tests/specs/invalid/NN-name.yaml: base.yaml with exactly one mistake each.

Line 1 of every file is `# expect: CODE PATH LINE:COL` (filled in and reviewed by hand: the
gtest in src/spec/invalid_specs_test.cc compares the first error against it), line 2 says
what is wrong. Rerunning keeps existing expectations for unchanged cases.
"""
import os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = open(os.path.join(HERE, "base.yaml")).read()

def R(old, new):
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)

def HOOK(webhook, extra=""):
    """The validate step with one postProcess hook: `webhook` lines under webhook:, `extra` a
    line beside it."""
    hook = "        postProcess:\n          - " + (extra + "\n            " if extra else "") + "webhook:\n              " + webhook + "\n"
    return R('        when: "status.train == \'SUCCEEDED\'"\n  timeout', '        when: "status.train == \'SUCCEEDED\'"\n' + hook + '  timeout')

CASES = [
  ("yaml-syntax", "unclosed flow sequence", R('capability: [tensor_core, fp16_support]', 'capability: [tensor_core, fp16_support')),
  ("yaml-tab-indent", "tab used for indentation", R('    cpu: "16"', '\tcpu: "16"')),
  ("seed-atomic-list", "the seed's `atomic: true` followed by list items", R('    atomic: true\n    steps:\n      - name: ingest', '    atomic: true\n    - name: ingest').replace('\n        image: volc/ingest', '\n      image: volc/ingest', 1)),
  ("top-not-map", "the document is a list", "- apiVersion: aiengine.volc.com/v1\n- kind: AIWorkload\n"),
  ("missing-apiversion", "no apiVersion", R('apiVersion: aiengine.volc.com/v1\n', '')),
  ("wrong-apiversion", "old apiVersion", R('apiVersion: aiengine.volc.com/v1', 'apiVersion: aiengine.volc.com/v1beta1')),
  ("missing-kind", "no kind", R('kind: AIWorkload\n', '')),
  ("wrong-kind", "kind typo", R('kind: AIWorkload', 'kind: AIWorkLoad')),
  ("unknown-top-field", "misspelled spec", R('spec:\n  resources', 'spec:\n  resources').replace('metadata:\n', 'metdata:\n', 1)),
  ("missing-metadata-name", "metadata without name", R('  name: fraud-detect-daily\n', '')),
  ("name-uppercase", "name with capitals", R('name: fraud-detect-daily', 'name: Fraud-Detect')),
  ("name-underscore", "name with underscore", R('name: fraud-detect-daily', 'name: fraud_detect')),
  ("name-too-long", "name of 64 chars", R('name: fraud-detect-daily', 'name: ' + 'a' * 64)),
  ("name-trailing-dash", "name ends with '-'", R('name: fraud-detect-daily', 'name: fraud-')),
  ("namespace-invalid", "namespace with dot", R('namespace: risk', 'namespace: risk.team')),
  ("labels-not-map", "labels as a list", R('  labels:\n    team: risk', '  labels: [team, risk]')),
  ("label-value-invalid", "label value with space", R('team: risk', 'team: "risk team"')),
  ("unknown-metadata-field", "metadata.label", R('  labels:\n', '  label:\n')),
  ("missing-spec", "no spec", BASE[:BASE.index('spec:')]),
  ("unknown-spec-field", "spec.timout", R('  timeout: 20m', '  timout: 20m')),
  ("cpu-invalid", "cpu with a unit", R('cpu: "16"', 'cpu: "16 cores"')),
  ("cpu-zero", "cpu 0", R('cpu: "16"', 'cpu: "0"')),
  ("cpu-negative", "cpu -1", R('cpu: "16"', 'cpu: "-1"')),
  ("cpu-too-precise", "cpu 0.0005", R('cpu: "16"', 'cpu: 0.0005')),
  ("memory-bad-unit", "memory in GB", R('memory: 64Gi', 'memory: 64GB')),
  ("memory-fraction-bytes", "fractional bytes", R('memory: 64Gi', 'memory: "0.5"')),
  ("memory-list", "memory as a list", R('memory: 64Gi', 'memory: [64Gi]')),
  ("unknown-resource-field", "resources.gpus", R('    gpu:\n      count: 1', '    gpus:\n      count: 1')),
  ("gpu-count-fraction", "half a GPU", R('count: 1', 'count: 0.5')),
  ("gpu-count-negative", "negative GPUs", R('count: 1', 'count: -2')),
  ("gpu-count-text", "gpu count as word", R('count: 1', 'count: one')),
  ("gpu-missing-count", "gpu long form without count", R('      count: 1\n', '')),
  ("gpu-unknown-capability", "misspelled capability", R('capability: [tensor_core, fp16_support]', 'capability: [tensor_core, fp16_suport]')),
  ("gpu-capability-unknown-far", "capability unlike any", R('capability: [tensor_core, fp16_support]', 'capability: [tensor_core, quantum]')),
  ("gpu-capability-not-list", "capability as a mapping", R('capability: [tensor_core, fp16_support]', 'capability: {tensor_core: true}')),
  ("gpu-memory-invalid", "gpu memory unit", R('      memory: 24Gi', '      memory: 24 gigs')),
  ("gpu-unknown-field", "gpu.capabilities", R('capability: [', 'capabilities: [')),
  ("autoscaling-target-range", "targetUtilization 150", R('      memory: 24Gi\n', '      memory: 24Gi\n    autoscaling: {targetUtilization: 150, minReplicas: 1, maxReplicas: 4}\n')),
  ("autoscaling-min-gt-max", "min > max", R('      memory: 24Gi\n', '      memory: 24Gi\n    autoscaling: {targetUtilization: 70, minReplicas: 5, maxReplicas: 2}\n')),
  ("autoscaling-no-target", "no targetUtilization", R('      memory: 24Gi\n', '      memory: 24Gi\n    autoscaling: {minReplicas: 1, maxReplicas: 2}\n')),
  ("autoscaling-delay-bare", "scaleDownDelay without unit", R('      memory: 24Gi\n', '      memory: 24Gi\n    autoscaling: {targetUtilization: 70, scaleDownDelay: 300}\n')),
  ("input-missing-uri", "input without uri", R('      uri: hdfs://ns1/raw/transactions\n', '')),
  ("input-uri-scheme", "unknown scheme", R('uri: hdfs://ns1/raw/transactions', 'uri: hfds://ns1/raw/transactions')),
  ("input-uri-empty-location", "scheme only", R('uri: hdfs://ns1/raw/transactions', 'uri: "s3://"')),
  ("input-format-unknown", "format json", R('format: avro', 'format: json')),
  ("schema-compact-type", "compact type typo", R('amount:float64', 'amount:flaot64')),
  ("schema-compact-no-type", "compact field without type", R('user_id:string,', 'user_id,')),
  ("schema-compact-array-size", "T[0]", R('amount:float64', 'amount:float32[0]')),
  ("schema-compact-duplicate", "field twice", R('user_id:string,', 'tx_id:string,')),
  ("schema-avro-bad-json", "Avro JSON missing a comma", R('      schema: "tx_id:string,user_id:string,amount:float64,ts:timestamp"', '      schema: |\n        {"type": "record", "name": "tx", "fields": [\n          {"name": "tx_id", "type": "string"}\n          {"name": "user_id", "type": "string"}]}')),
  ("schema-avro-unknown-type", "Avro type typo", R('      schema: "tx_id:string,user_id:string,amount:float64,ts:timestamp"', '      schema: |\n        {"type": "record", "name": "tx", "fields": [\n          {"name": "tx_id", "type": "strng"},\n          {"name": "user_id", "type": "string"}]}')),
  ("schema-avro-not-record", "top-level array schema", R('      schema: "tx_id:string,user_id:string,amount:float64,ts:timestamp"', '      schema: \'{"type": "array", "items": "long"}\'')),
  ("schema-avro-constraint-minmax", "min > max", R('      schema: "tx_id:string,user_id:string,amount:float64,ts:timestamp"', '      schema: |\n        {"type": "record", "name": "tx", "fields": [\n          {"name": "user_id", "type": "string"},\n          {"name": "amount", "type": "double", "constraints": {"min": 10, "max": 1}}]}')),
  ("schema-avro-constraint-unknown", "constraints.maximum", R('      schema: "tx_id:string,user_id:string,amount:float64,ts:timestamp"', '      schema: |\n        {"type": "record", "name": "tx", "fields": [\n          {"name": "user_id", "type": "string"},\n          {"name": "amount", "type": "double", "constraints": {"maximum": 1}}]}')),
  ("quality-completeness-range", "completeness 120", R('completeness: 99.9', 'completeness: 120')),
  ("quality-uniqueness-negative", "uniqueness -1", R('uniqueness: 99.99', 'uniqueness: -1')),
  ("quality-completeness-text", "completeness as text", R('completeness: 99.9', 'completeness: high')),
  ("quality-freshness-bare", "freshness without unit", R('freshness: 2h', 'freshness: 7200')),
  ("quality-unique-key-unknown", "uniqueKey not in schema", R('        uniqueness: 99.99\n', '        uniqueness: 99.99\n        uniqueKey: usr_id\n')),
  ("quality-unique-key-unresolvable", "no id field for uniqueness", R('tx_id:string,user_id:string,', 'tx:string,user:string,')),
  ("quality-unknown-field", "quality.complete", R('completeness: 99.9', 'complete: 99.9')),
  ("output-schemaref-other", "schemaRef output", R('schemaRef: input', 'schemaRef: upstream')),
  ("output-feature-duplicate", "feature already in input", R('{name: fraud_probability, type: float32}', '{name: amount, type: float32}')),
  ("output-feature-type", "feature type typo", R('{name: fraud_probability, type: float32}', '{name: fraud_probability, type: float23}')),
  ("output-feature-no-type", "feature without type", R('{name: fraud_probability, type: float32}', '{name: fraud_probability}')),
  ("output-schemaref-no-input-schema", "schemaRef without input schema", R('      schema: "tx_id:string,user_id:string,amount:float64,ts:timestamp"\n', '').replace('        uniqueness: 99.99\n', '')),
  ("model-framework-unknown", "framework typo", R('framework: pytorch', 'framework: pytorh')),
  ("model-missing-framework", "no framework", R('    framework: pytorch\n', '')),
  ("model-version-not-semver", "version 2.1", R('version: 2.1.7', 'version: "2.1"')),
  ("model-fingerprint-short", "fingerprint too short", R('e6f7a8b"', 'e6f7a8"')),
  ("model-fingerprint-prefix", "md5 fingerprint", R('"sha256:7a8b', '"md5:7a8b')),
  ("model-fingerprint-uppercase", "upper-case hex", R('sha256:7a8b9c0d', 'sha256:7A8B9C0D')),
  ("dependency-range", "dependency with >=", R('"torch==2.1.2+cu118"', '"torch>=2.1.2"')),
  ("dependency-unpinned", "dependency without version", R('"torch==2.1.2+cu118"', '"torch"')),
  ("dependency-bad-version", "empty version", R('"torch==2.1.2+cu118"', '"torch=="')),
  ("signature-dtype", "dtype float", R('shape: [-1, 128], dtype: float32', 'shape: [-1, 128], dtype: float')),
  ("signature-free-dim", "-1 in second dimension", R('shape: [-1, 128]', 'shape: [1, -1]')),
  ("signature-zero-dim", "dimension 0", R('shape: [-1, 128]', 'shape: [-1, 0]')),
  ("signature-shape-text", "shape entry text", R('shape: [-1, 128]', 'shape: [-1, many]')),
  ("signature-range-order", "range [1, 0]", R('range: [0.0, 1.0]', 'range: [1.0, 0.0]')),
  ("signature-range-arity", "range of three", R('range: [0.0, 1.0]', 'range: [0.0, 0.5, 1.0]')),
  ("signature-missing-dtype", "tensor without dtype", R('{name: features, shape: [-1, 128], dtype: float32}', '{name: features, shape: [-1, 128]}')),
  ("pipeline-empty", "no steps", R(BASE[BASE.index('      - name: ingest'):BASE.index('  timeout: 20m')], '').replace('    steps:\n', '    steps: []\n')),
  ("pipeline-unknown-field", "pipeline.atomik", R('atomic: true', 'atomik: true')),
  ("pipeline-atomic-text", "atomic: yes-please", R('atomic: true', 'atomic: always')),
  ("pipeline-timeout-twice", "timeout at both levels", R('    atomic: true\n', '    atomic: true\n    timeout: 15m\n')),
  ("step-missing-name", "step without name", R('      - name: validate\n        image: volc/validate:v1.0', '      - image: volc/validate:v1.0')),
  ("step-name-invalid", "step name with capitals", R('- name: validate', '- name: Validate_Model')),
  ("step-duplicate-name", "two steps named train", R('- name: validate', '- name: train')),
  ("step-unknown-field", "dependOn", R('dependsOn: [train]', 'dependOn: [train]')),
  ("step-depends-unknown", "dependsOn a typo", R('dependsOn: [train]', 'dependsOn: [trian]')),
  ("step-depends-self", "a step depends on itself", R('dependsOn: [train]', 'dependsOn: [validate]').replace("when: \"status.train == 'SUCCEEDED'\"", "when: \"true\"")),
  ("step-depends-twice", "same dependency twice", R('dependsOn: [ingest]', 'dependsOn: [ingest, ingest]')),
  ("step-cycle", "ingest waits for validate", R('        command: ["python", "ingest.py"]', '        command: ["python", "ingest.py"]\n        dependsOn: [validate]')),
  ("step-command-string", "command as a string", R('command: ["python", "ingest.py"]', 'command: "python ingest.py"')),
  ("step-image-uppercase", "image with capitals", R('image: volc/train:v2.1', 'image: Volc/Train:v2.1')),
  ("step-image-bad-tag", "image tag with a space", R('image: volc/train:v2.1', 'image: "volc/train:v2 1"')),
  ("step-image-bad-digest", "image digest short", R('image: volc/train:v2.1', 'image: volc/train@sha256:abc')),
  ("step-env-reserved", "env RSL_OUTPUT", R('env: {MODE: daily}', 'env: {RSL_OUTPUT: /tmp}')),
  ("step-env-bad-name", "env name with '-'", R('env: {MODE: daily}', 'env: {RUN-MODE: daily}')),
  ("step-envfrom-both", "configMapRef and secretRef in one entry", R('          - configMapRef: common-config\n', '          - {configMapRef: common-config, secretRef: data-creds}\n')),
  ("step-envfrom-unknown", "secretKeyRef", R('- secretRef: data-creds', '- secretKeyRef: data-creds')),
  ("step-envfrom-bad-name", "secret name with capitals", R('- secretRef: data-creds', '- secretRef: Data_Creds')),
  ("step-keep-on-failure-text", "keepOnFailure: maybe", R('        timeout: 10m\n', '        timeout: 10m\n        keepOnFailure: maybe\n')),
  ("step-timeout-bare", "timeout 600", R('        timeout: 10m\n', '        timeout: 600\n')),
  ("step-timeout-zero", "timeout 0s", R('        timeout: 10m\n', '        timeout: 0s\n')),
  ("step-timeout-unit", "timeout 10 minutes", R('        timeout: 10m\n', '        timeout: 10min\n')),
  ("retry-negative", "maxRetries -1", R('maxRetries: 2', 'maxRetries: -1')),
  ("retry-too-many", "maxRetries 1000", R('maxRetries: 2', 'maxRetries: 1000')),
  ("retry-backoff-bare", "backoff 30", R('backoff: 30s', 'backoff: 30')),
  ("retry-factor-low", "backoffFactor 0.5", R('backoffFactor: 2', 'backoffFactor: 0.5')),
  ("retry-max-below-backoff", "maxBackoff < backoff", R('maxBackoff: 5m', 'maxBackoff: 10s')),
  ("retry-unknown-field", "retryPolicy.retries", R('maxRetries: 2', 'retries: 2')),
  ("step-resources-gpu-bad", "step gpu 1.5", R('resources: {gpu: "2"}', 'resources: {gpu: "1.5"}')),
  ("step-outputs-dtype", "declared output with bad dtype", R('        timeout: 10m\n', '        timeout: 10m\n        outputs: [{name: fraud_prob, shape: [-1, 1], dtype: f32}]\n')),
  ("when-syntax", "single '='", R("when: \"status.train == 'SUCCEEDED'\"", "when: \"status.train = 'SUCCEEDED'\"")),
  ("when-unterminated", "unterminated string", R("when: \"status.train == 'SUCCEEDED'\"", "when: \"status.train == 'SUCCEEDED\"")),
  ("when-not-ancestor", "refers to a later step", R('when: "output.ingest.metrics.rows > 1000"', 'when: "status.validate == \'SUCCEEDED\'"')),
  ("when-unknown-step", "refers to a misspelled step", R('when: "output.ingest.metrics.rows > 1000"', 'when: "output.ingset.metrics.rows > 1000"')),
  ("when-bad-reference", "metric without .metrics", R('when: "output.ingest.metrics.rows > 1000"', 'when: "output.ingest.rows > 1000"')),
  ("when-unknown-function", "avg() is not a function", R('when: "output.ingest.metrics.rows > 1000"', 'when: "avg(output.ingest.metrics.rows) > 1000"')),
  ("when-self", "a step's condition reads itself", R("when: \"status.train == 'SUCCEEDED'\"", "when: \"status.validate == 'SUCCEEDED'\"")),
  ("when-trailing", "two conditions without &&", R('when: "output.ingest.metrics.rows > 1000"', 'when: "output.ingest.metrics.rows > 1000 status.ingest == \'SUCCEEDED\'"')),
  ("when-not-string", "when as a list", R('when: "output.ingest.metrics.rows > 1000"', 'when: [a, b]')),
  ("multi-document", "two documents in one file", BASE + "---\n" + BASE),
  ("empty-file", "nothing at all", "# only a comment\n"),
  ("dependency-conflict", "numpy pinned twice, spelled two ways", R('"torch==2.1.2+cu118"', '"torch==2.1.2+cu118", "numpy==1.24.2", "NumPy==1.24.3"')),
  ("dependency-star-inside", "a '*' that is not a trailing release prefix", R('"torch==2.1.2+cu118"', '"torch==2.*.2"')),
  ("step-no-command-no-image", "a step with neither command nor image", R('      - name: validate\n        image: volc/validate:v1.0\n', '      - name: validate\n')),
  ("step-empty-command-no-image", "command: [] and no image", R('      - name: validate\n        image: volc/validate:v1.0\n', '      - name: validate\n        command: []\n')),
  ("step-name-uri", "a step named uri (its output variable would be RSL_INPUT_URI)", R('      - name: validate\n', '      - name: uri\n')),
  ("step-env-nul", "a NUL in an env value", R('env: {MODE: daily}', 'env: {MODE: "dai\\0ly"}')),
  ("when-phase-typo", "SUCEEDED", R("when: \"status.train == 'SUCCEEDED'\"", "when: \"status.train == 'SUCEEDED'\"")),
  ("when-never-true", "an ancestor is never FAILED when a step is reached", R("when: \"status.train == 'SUCCEEDED'\"", "when: \"status.train == 'FAILED'\"")),
  ("when-order-phase", "a phase compared with a number", R("when: \"status.train == 'SUCCEEDED'\"", "when: \"status.train > 1\"")),
  ("when-len-number", "len() of a number", R('when: "output.ingest.metrics.rows > 1000"', 'when: "len(5) == 1"')),
  ("when-min-string", "min() of a string", R('when: "output.ingest.metrics.rows > 1000"', "when: \"min(1, 'a') == 1\"")),
  ("when-bare-number", "a number as the condition", R('when: "output.ingest.metrics.rows > 1000"', 'when: "5"')),
  ("port-on-batch-step", "an endpoint port on a batch step", R('        timeout: 10m\n', '        timeout: 10m\n        port: 8080\n')),
  ("serving-port-range", "a serving port above 65535", R('        timeout: 10m\n', '        timeout: 10m\n        serving: true\n        port: 70000\n')),
  ("probe-path-relative", "a readiness probe path without /", R('        timeout: 10m\n', '        timeout: 10m\n        serving: true\n        readinessProbe: {httpGet: {path: healthz}}\n')),
  ("duplicate-key", "a step with two command keys", R('        command: ["python", "ingest.py"]\n', '        command: ["python", "ingest.py"]\n        env: {MODE: daily}\n        command: ["python", "ingest2.py"]\n').replace('        env: {MODE: daily}\n        envFrom', '        envFrom', 1)),
  ("image-pull-secret-invalid", "an imagePullSecrets name with capitals", R('  timeout: 20m\n', '  timeout: 20m\n  imagePullSecrets: [RegCred]\n')),
  ("image-pull-secret-twice", "a secret listed twice in imagePullSecrets", R('  timeout: 20m\n', '  timeout: 20m\n  imagePullSecrets: [regcred, {name: regcred}]\n')),
  ("merge-not-mapping", "a merge key naming a list", R('        dependsOn: [ingest]\n', '        dependsOn: &deps [ingest]\n        <<: *deps\n')),
  ("hook-url-scheme", "a webhook url that is not http(s)", HOOK('url: ftp://alerts.example/hook')),
  ("hook-url-no-host", "a webhook url without a host", HOOK('url: "https:///hook"')),
  ("hook-on-unknown", "on: [sucess]", HOOK('url: https://alerts.example/hook', 'on: [sucess]')),
  ("hook-method-unknown", "method SEND", HOOK('url: https://alerts.example/hook\n              method: SEND')),
  ("hook-no-webhook", "a hook without webhook", R('        when: "status.train == \'SUCCEEDED\'"\n  timeout', '        when: "status.train == \'SUCCEEDED\'"\n        postProcess:\n          - on: [success]\n  timeout')),
  ("hook-when-syntax", "a hook condition with a single '='", HOOK('url: https://alerts.example/hook', 'when: "output.validate.metrics.acc = 1"')),
  ("hook-when-previous-unknown-step", "previous names a misspelled step", HOOK('url: https://alerts.example/hook', 'when: "output.validate.metrics.acc < previous.output.validat.metrics.acc * 0.95"')),
  ("hook-when-unknown-run-field", "run.idd", HOOK('url: https://alerts.example/hook', "when: \"run.idd == 'x'\"")),
  ("hook-body-unclosed", "a body with '{{' not closed", HOOK('url: https://alerts.example/hook\n              body: \'{"run": "{{ run.id"}\'')),
  ("hook-body-unknown-reference", "a body reading an unknown reference", HOOK('url: https://alerts.example/hook\n              body: \'{"acc": {{ output.validate.acc }}}\'')),
  ("hook-header-secret-no-key", "a secret header without key", HOOK('url: https://alerts.example/hook\n              headers: {X-Token: {secretRef: alert-creds}}')),
  ("hook-retries-range", "retries: 50", HOOK('url: https://alerts.example/hook\n              retries: 50')),
  ("when-previous-bad-shape", "previous without .output", R('when: "output.ingest.metrics.rows > 1000"', 'when: "previous.ingest.metrics.rows > 1000"')),
  ("output-policy-unknown", "an output policy typo", R('      schemaRef: input\n', '      policy: versionned\n      schemaRef: input\n')),
]

def main():
    out = os.path.join(HERE, "invalid")
    os.makedirs(out, exist_ok=True)
    old = {}
    for f in os.listdir(out):
        m = re.match(r"\d+-(.*)\.yaml$", f)
        if m:
            first = open(os.path.join(out, f)).readline().rstrip("\n")
            old[m.group(1)] = first
            os.remove(os.path.join(out, f))
    for i, (name, what, text) in enumerate(CASES, 1):
        assert text != BASE, name
        expect = old.get(name, "# expect: ?")
        with open(os.path.join(out, "%03d-%s.yaml" % (i, name)), "w") as fh:
            fh.write(expect + "\n# " + what + "\n" + text)
    print(len(CASES), "cases")

main()
