// URL helpers: a file written for the eval harness's tests (router.ts imports it).

export interface Url {
  path: string;
  query: string;
}

export function parse(text: string): Url {
  const at = text.indexOf("?");
  if (at < 0) {
    return { path: text, query: "" };
  }
  return { path: text.slice(0, at), query: text.slice(at + 1) };
}

export function format(u: Url): string {
  return u.query ? u.path + "?" + u.query : u.path;
}

export function normalize(path: string): string {
  return path.replace(/\/+/g, "/");
}
