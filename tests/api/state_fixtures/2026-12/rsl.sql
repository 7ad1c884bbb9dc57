PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE schema_migrations ( component TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (component, version));
INSERT INTO schema_migrations VALUES('api_tokens',1);
INSERT INTO schema_migrations VALUES('api_tokens',2);
INSERT INTO schema_migrations VALUES('api_audit',1);
INSERT INTO schema_migrations VALUES('api_audit',2);
INSERT INTO schema_migrations VALUES('store',1);
INSERT INTO schema_migrations VALUES('store',2);
INSERT INTO schema_migrations VALUES('store',3);
INSERT INTO schema_migrations VALUES('store',4);
INSERT INTO schema_migrations VALUES('store',5);
INSERT INTO schema_migrations VALUES('govern',1);
INSERT INTO schema_migrations VALUES('govern',2);
INSERT INTO schema_migrations VALUES('govern',3);
INSERT INTO schema_migrations VALUES('model',1);
INSERT INTO schema_migrations VALUES('model',2);
INSERT INTO schema_migrations VALUES('model',3);
INSERT INTO schema_migrations VALUES('model',4);
INSERT INTO schema_migrations VALUES('data',1);
CREATE TABLE api_tokens (  hash TEXT PRIMARY KEY, subject TEXT NOT NULL, role TEXT NOT NULL,  namespaces TEXT NOT NULL, created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL DEFAULT 0, revoked_ms INTEGER NOT NULL DEFAULT 0, last_used_ms INTEGER NOT NULL DEFAULT 0);
INSERT INTO api_tokens VALUES('94500c262cd138fb8bfdb644e26fb0e7db3c4e881705c249466eb306e300c4af','editor-risk-94500c26','editor','risk',1796312261384,0,0,1796312275815);
CREATE TABLE api_audit (  seq INTEGER PRIMARY KEY AUTOINCREMENT, time_ms INTEGER NOT NULL, subject TEXT NOT NULL,  verb TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL,  object_id TEXT NOT NULL, result TEXT NOT NULL, message TEXT NOT NULL);
INSERT INTO api_audit VALUES(1,1796312261403,'local:0','create','tokens','risk','editor-risk-94500c26','OK','role editor, id 94500c262cd1');
INSERT INTO api_audit VALUES(2,1796312281227,'editor-risk-94500c26','create','secrets','risk','db-creds','OK','keys: password');
INSERT INTO api_audit VALUES(3,1796312282572,'editor-risk-94500c26','submit','workloads','risk','wl-20261203-92b56b23','OK','upgrade-fixture');
CREATE TABLE store_versions (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, namespace TEXT NOT NULL, spec_json TEXT NOT NULL,
  digest TEXT NOT NULL, created_at INTEGER NOT NULL, created_by TEXT NOT NULL,
  labels_json TEXT NOT NULL, version INTEGER NOT NULL, rollback_of TEXT NOT NULL);
INSERT INTO store_versions VALUES('wl-20261203-92b56b23','upgrade-fixture','risk','{"apiVersion":"aiengine.volc.com/v1","kind":"AIWorkload","metadata":{"labels":{"team":"risk"},"name":"upgrade-fixture","namespace":"risk"},"spec":{"pipeline":{"atomic":true,"steps":[{"command":["sh","-c","echo rows=42 > $RSL_OUTPUT/prepared.txt; echo prepared"],"envFrom":[{"secretRef":"db-creds"}],"keepOnFailure":false,"name":"prepare","retryPolicy":{"backoff":"0s","backoffFactor":1.0,"maxRetries":0},"serving":false},{"command":["sh","-c","echo \"{\\\"auc\\\": 0.91}\" > $RSL_OUTPUT/metrics.json; echo trained"],"dependsOn":["prepare"],"keepOnFailure":false,"name":"train","retryPolicy":{"backoff":"0s","backoffFactor":1.0,"maxRetries":0},"serving":false}]}}}','sha256:fd74db3bf5fc7b879d244142900887caa69971ceb8dc58a559cc433eea40eace',1796312282516,'editor-risk-94500c26','{"team":"risk"}',1,'');
CREATE TABLE store_runs (
  id TEXT PRIMARY KEY, workload_id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
  namespace TEXT NOT NULL, phase TEXT NOT NULL, failure_code TEXT NOT NULL,
  failure_message TEXT NOT NULL, created_at INTEGER NOT NULL, started_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL, run_dir TEXT NOT NULL, admission_report_json TEXT NOT NULL,
  commit_state TEXT NOT NULL, committed_uri TEXT NOT NULL, collected_at INTEGER NOT NULL DEFAULT 0);
INSERT INTO store_runs VALUES('run-20261203-92b56b23','wl-20261203-92b56b23','upgrade-fixture','risk','SUCCEEDED','','',1796312282516,1796312282617,1796312282951,'/tmp/fx/state-runs/run-20261203-92b56b23','{"model":{"dependencySteps":[],"environments":[]}}','committed','/tmp/fx/state-runs/run-20261203-92b56b23/outputs',0);
CREATE TABLE store_attempts (
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL, step TEXT NOT NULL, number INTEGER NOT NULL,
  launch_json TEXT NOT NULL, state TEXT NOT NULL, exit_kind TEXT NOT NULL,
  created_at INTEGER NOT NULL, finished_at INTEGER NOT NULL);
INSERT INTO store_attempts VALUES('run-20261203-92b56b23/prepare/1','run-20261203-92b56b23','prepare',1,'{"attempt_id":"run-20261203-92b56b23/prepare/1","run_id":"run-20261203-92b56b23","version_id":"wl-20261203-92b56b23","workload_name":"upgrade-fixture","namespace":"risk","step":"prepare","attempt":1,"argv":["sh","-c","echo rows=42 > $RSL_OUTPUT/prepared.txt; echo prepared"],"env":{"HOME":"/root","LANG":"C.UTF-8","PATH":"/root/.cargo/bin:/root/.cargo/bin:/root/.pyenv/plugins/pyenv-virtualenv/shims:/root/.pyenv/shims:/root/.pyenv/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","RSL_ATTEMPT":"1","RSL_METRICS_FILE":"/tmp/fx/state-runs/run-20261203-92b56b23/work/prepare.1/.rsl-metrics.json","RSL_METRICS_STREAM":"/tmp/fx/state-runs/run-20261203-92b56b23/work/prepare.1/.rsl-metrics-stream.jsonl","RSL_OUTPUT":"/tmp/fx/state-runs/run-20261203-92b56b23/staging/prepare","RSL_PROGRESS_FILE":"/tmp/fx/state-runs/run-20261203-92b56b23/work/prepare.1/.rsl-progress","RSL_RUN_ID":"run-20261203-92b56b23","RSL_STEP":"prepare","RSL_WORKLOAD_ID":"wl-20261203-92b56b23","password":"***"},"workdir":"/tmp/fx/state-runs/run-20261203-92b56b23/work/prepare.1","make_dirs":["/tmp/fx/state-runs/run-20261203-92b56b23/staging/prepare"],"log_path":"/tmp/fx/state-runs/run-20261203-92b56b23/attempts/prepare.1.log","exit_file":"/tmp/fx/state-runs/run-20261203-92b56b23/attempts/prepare.1.exit","cpu_millis":0,"memory_bytes":0,"gpus":0,"capabilities":[],"node":"local","labels":{"namespace":"risk","team":"risk","workload":"upgrade-fixture"}}','exited','Succeeded',1796312282619,1796312282840);
INSERT INTO store_attempts VALUES('run-20261203-92b56b23/train/1','run-20261203-92b56b23','train',1,'{"attempt_id":"run-20261203-92b56b23/train/1","run_id":"run-20261203-92b56b23","version_id":"wl-20261203-92b56b23","workload_name":"upgrade-fixture","namespace":"risk","step":"train","attempt":1,"argv":["sh","-c","echo \"{\\\"auc\\\": 0.91}\" > $RSL_OUTPUT/metrics.json; echo trained"],"env":{"HOME":"/root","LANG":"C.UTF-8","PATH":"/root/.cargo/bin:/root/.cargo/bin:/root/.pyenv/plugins/pyenv-virtualenv/shims:/root/.pyenv/shims:/root/.pyenv/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","RSL_ATTEMPT":"1","RSL_INPUT_PREPARE":"/tmp/fx/state-runs/run-20261203-92b56b23/staging/prepare","RSL_METRICS_FILE":"/tmp/fx/state-runs/run-20261203-92b56b23/work/train.1/.rsl-metrics.json","RSL_METRICS_STREAM":"/tmp/fx/state-runs/run-20261203-92b56b23/work/train.1/.rsl-metrics-stream.jsonl","RSL_OUTPUT":"/tmp/fx/state-runs/run-20261203-92b56b23/staging/train","RSL_PROGRESS_FILE":"/tmp/fx/state-runs/run-20261203-92b56b23/work/train.1/.rsl-progress","RSL_RUN_ID":"run-20261203-92b56b23","RSL_STEP":"train","RSL_WORKLOAD_ID":"wl-20261203-92b56b23"},"workdir":"/tmp/fx/state-runs/run-20261203-92b56b23/work/train.1","make_dirs":["/tmp/fx/state-runs/run-20261203-92b56b23/staging/train"],"log_path":"/tmp/fx/state-runs/run-20261203-92b56b23/attempts/train.1.log","exit_file":"/tmp/fx/state-runs/run-20261203-92b56b23/attempts/train.1.exit","cpu_millis":0,"memory_bytes":0,"gpus":0,"capabilities":[],"node":"local","labels":{"namespace":"risk","team":"risk","workload":"upgrade-fixture"}}','exited','Succeeded',1796312282840,1796312282867);
CREATE TABLE store_artifacts (
  run_id TEXT NOT NULL, step TEXT NOT NULL, uri TEXT NOT NULL, bytes INTEGER NOT NULL,
  kind TEXT NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (run_id, step, uri));
INSERT INTO store_artifacts VALUES('run-20261203-92b56b23','prepare','/tmp/fx/state-runs/run-20261203-92b56b23/outputs/prepare',8,'output','');
INSERT INTO store_artifacts VALUES('run-20261203-92b56b23','train','/tmp/fx/state-runs/run-20261203-92b56b23/outputs/train',14,'output','');
CREATE TABLE store_lineage (
  run_id TEXT NOT NULL, from_ref TEXT NOT NULL, to_ref TEXT NOT NULL, relation TEXT NOT NULL,
  from_json TEXT NOT NULL, PRIMARY KEY (run_id, from_ref, to_ref, relation));
INSERT INTO store_lineage VALUES('run-20261203-92b56b23','wl-20261203-92b56b23','/tmp/fx/state-runs/run-20261203-92b56b23/outputs/prepare','output','');
INSERT INTO store_lineage VALUES('run-20261203-92b56b23','wl-20261203-92b56b23','/tmp/fx/state-runs/run-20261203-92b56b23/outputs/train','output','');
CREATE TABLE store_configmaps (
  namespace TEXT NOT NULL, name TEXT NOT NULL, secret INTEGER NOT NULL,
  data_json TEXT NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (namespace, name, secret));
INSERT INTO store_configmaps VALUES('risk','db-creds',1,'rslenc:v1:23924134:13ccd2606ea5d38a9f7ea4e3d4995a0ca79ef5997f0e1a98034fa07cd59fc497e43bb857f163481f520c45abf16d8d7485b8a8370a18ceeb60',1796312281199);
CREATE TABLE IF NOT EXISTS "store_steps" (
  run_id TEXT NOT NULL, name TEXT NOT NULL, idx INTEGER NOT NULL, phase TEXT NOT NULL,
  attempts INTEGER NOT NULL, retries_used INTEGER NOT NULL, attempt_id TEXT NOT NULL,
  node TEXT NOT NULL, exit_code INTEGER NOT NULL, signal INTEGER NOT NULL,
  wall_ms INTEGER NOT NULL, cpu_ms INTEGER NOT NULL, peak_memory_bytes INTEGER NOT NULL,
  started_at INTEGER NOT NULL, finished_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL,
  failure_code TEXT NOT NULL, message TEXT NOT NULL, metrics_json TEXT NOT NULL,
  progress TEXT NOT NULL, output_dir TEXT NOT NULL, peak_cpu_millicores INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (run_id, name)) WITHOUT ROWID;
INSERT INTO store_steps VALUES('run-20261203-92b56b23','prepare',0,'SUCCEEDED',1,0,'run-20261203-92b56b23/prepare/1','local',0,0,7,1,10416128,1796312282619,1796312282839,0,'','exit code 0','{}','','/tmp/fx/state-runs/run-20261203-92b56b23/outputs/prepare',142);
INSERT INTO store_steps VALUES('run-20261203-92b56b23','train',1,'SUCCEEDED',1,0,'run-20261203-92b56b23/train/1','local',0,0,4,2,10989568,1796312282840,1796312282867,0,'','exit code 0','{}','','/tmp/fx/state-runs/run-20261203-92b56b23/outputs/train',500);
CREATE TABLE IF NOT EXISTS "store_events" (
  seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, step TEXT NOT NULL,
  type TEXT NOT NULL, reason TEXT NOT NULL, message TEXT NOT NULL, time INTEGER NOT NULL);
INSERT INTO store_events VALUES(1,'run-20261203-92b56b23','','Normal','Admitted','admission checks passed',1796312282617);
INSERT INTO store_events VALUES(2,'run-20261203-92b56b23','prepare','Normal','Scheduled','assigned to node local',1796312282621);
INSERT INTO store_events VALUES(3,'run-20261203-92b56b23','prepare','Normal','Started','attempt 1 on local',1796312282621);
INSERT INTO store_events VALUES(4,'run-20261203-92b56b23','prepare','Normal','Succeeded','exit code 0',1796312282840);
INSERT INTO store_events VALUES(5,'run-20261203-92b56b23','train','Normal','Scheduled','assigned to node local',1796312282840);
INSERT INTO store_events VALUES(6,'run-20261203-92b56b23','train','Normal','Started','attempt 1 on local',1796312282840);
INSERT INTO store_events VALUES(7,'run-20261203-92b56b23','train','Normal','Succeeded','exit code 0',1796312282867);
INSERT INTO store_events VALUES(8,'run-20261203-92b56b23','','Normal','OutputCommitted','published 2 step output(s) under /tmp/fx/state-runs/run-20261203-92b56b23/outputs',1796312282951);
INSERT INTO store_events VALUES(9,'run-20261203-92b56b23','','Normal','Succeeded','the run succeeded',1796312282951);
CREATE TABLE govern_step_costs(
           id INTEGER PRIMARY KEY,
           ended_at_ms INTEGER NOT NULL,
           run_id TEXT NOT NULL, workload_id TEXT NOT NULL, workload TEXT NOT NULL,
           namespace TEXT NOT NULL, step TEXT NOT NULL, attempt INTEGER NOT NULL,
           labels_json TEXT NOT NULL, pricing TEXT NOT NULL, exit_kind TEXT NOT NULL,
           currency TEXT NOT NULL, metrics_json TEXT NOT NULL,
           device_model TEXT NOT NULL, gpus REAL NOT NULL, hours REAL NOT NULL,
           cpu_cores REAL NOT NULL, memory_gib REAL NOT NULL,
           gpu_cost REAL NOT NULL, cpu_cost REAL NOT NULL, memory_cost REAL NOT NULL,
           total_cost REAL NOT NULL);
INSERT INTO govern_step_costs VALUES(1,1796312282816,'run-20261203-92b56b23','wl-20261203-92b56b23','upgrade-fixture','risk','prepare',1,'{"team":"risk"}','on-demand','Succeeded','USD','{}','default',0.0,1.9444444444444443681e-06,0.14285714285714284921,0.009700775146484375,0.0,8.7808333333333330478e-09,7.9920913908216689985e-11,8.8607542472415505001e-09);
INSERT INTO govern_step_costs VALUES(2,1796312282860,'run-20261203-92b56b23','wl-20261203-92b56b23','upgrade-fixture','risk','train',1,'{"team":"risk"}','on-demand','Succeeded','USD','{}','default',0.0,1.1111111111111110372e-06,0.5,0.010234832763671875,0.0,1.7561666666666666096e-08,4.8183318244086372418e-11,1.7609849984910751944e-08);
CREATE TABLE govern_policies(
           name TEXT PRIMARY KEY, source TEXT NOT NULL, yaml TEXT NOT NULL,
           applied_at_ms INTEGER NOT NULL);
CREATE TABLE govern_policy_actions(
           id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, run_id TEXT NOT NULL,
           step TEXT NOT NULL, attempt INTEGER NOT NULL, rule TEXT NOT NULL,
           action TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE model_environments (
         image TEXT PRIMARY KEY,
         kind TEXT NOT NULL,
         python TEXT NOT NULL,
         root TEXT NOT NULL,
         entrypoint_json TEXT NOT NULL,
         inspection_json TEXT NOT NULL,
         digest TEXT NOT NULL,
         registered_at_ms INTEGER NOT NULL);
CREATE TABLE model_artifacts (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         name TEXT NOT NULL,
         namespace TEXT NOT NULL,
         version TEXT NOT NULL,
         framework TEXT NOT NULL,
         step TEXT NOT NULL,
         fingerprint TEXT NOT NULL,
         uri TEXT NOT NULL,
         staging_dir TEXT NOT NULL,
         state TEXT NOT NULL,
         run_id TEXT NOT NULL,
         workload_id TEXT NOT NULL,
         spec_digest TEXT NOT NULL,
         image TEXT NOT NULL,
         environment_digest TEXT NOT NULL,
         record_json TEXT NOT NULL,
         created_at_ms INTEGER NOT NULL);
CREATE TABLE data_sources ( name TEXT PRIMARY KEY, kind TEXT NOT NULL, config TEXT NOT NULL, secret TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL);
INSERT INTO data_sources VALUES('fixture-s3','s3','{"bucket":"fx","endpoint":"http://127.0.0.1:9","kind":"s3","pathStyle":true,"region":"us-east-1"}','rslenc:v1:23924134:e4ec5df7c550cec45da8c6db965c83f02aaf47d869b59a2881d4731a02e71d5a906721a45c00cd117037782e32d906534a17d590187dbd8d3700eb0aca14e51d5abee0aa752b6d662c038ff4a083ad86fc454ae7f3c55ebbe8ae3ed4ddd2','2026-12-03T15:38:25Z');
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('api_audit',3);
CREATE INDEX api_audit_object ON api_audit(object_id);
CREATE INDEX store_versions_name ON store_versions(namespace, name, version);
CREATE INDEX store_runs_phase ON store_runs(phase);
CREATE INDEX store_events_run ON store_events(run_id, seq);
CREATE INDEX store_runs_created ON store_runs(created_at, workload_id);
CREATE INDEX store_runs_ns_created ON store_runs(namespace, created_at, workload_id);
CREATE INDEX store_runs_ns_name_created ON store_runs(namespace, name, created_at, workload_id);
CREATE INDEX govern_step_costs_ended ON govern_step_costs(ended_at_ms);
CREATE INDEX govern_step_costs_run ON govern_step_costs(run_id);
CREATE INDEX model_artifacts_name ON model_artifacts(name, version);
CREATE INDEX model_artifacts_run ON model_artifacts(run_id);
COMMIT;
