// Who is signed in (GET /api/v1/whoami), shared by the pages.

export const session = { who: null };

//! Whether the signed-in token may change workloads in namespace `ns`. The API decides; this
//! only hides the buttons it would refuse (403).
export function canWrite(ns) {
  const w = session.who;
  if (!w || w.role === 'viewer') return false;
  return w.role === 'admin' || w.namespaces.includes('*') || w.namespaces.includes(ns);
}
