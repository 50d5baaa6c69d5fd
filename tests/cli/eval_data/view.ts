// Rendering: a file written for the eval harness's tests (router.ts imports it).

export function render(title: string, body: string): string {
  return "<h1>" + title + "</h1>" + body;
}

export function escape(text: string): string {
  return text.replace(/</g, "&lt;");
}
