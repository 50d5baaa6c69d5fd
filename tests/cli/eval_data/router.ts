// Routes of a small web app: a file written for the next-edit eval's
// enum-member, call and import cases (TypeScript).
import { parse, format } from "./url";
import { render } from "./view";

enum Route {
  Home,
  Search,
  Settings,
}

function title(r: Route): string {
  switch (r) {
    case Route.Home:
      return "home";
    case Route.Search:
      return "search";
    case Route.Settings:
      return "settings";
  }
}

function routeOf(path: string): Route {
  const u = parse(path);
  if (u.path === "/search") return Route.Search;
  return u.path === "/settings" ? Route.Settings : Route.Home;
}

function show(r: Route, query: string, limit: number): string {
  return render(title(r), query, limit);
}

export function visit(path: string): string {
  return show(routeOf(path), path, 10);
}
