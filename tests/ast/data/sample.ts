// A debounced search box model, written for infill's tests.
import { EventEmitter } from "events";

export interface SearchResult {
  id: string;
  title: string;
  score: number;
}

export type Fetcher = (query: string, signal: AbortSignal) => Promise<SearchResult[]>;

export enum State {
  Idle,
  Waiting,
  Loading,
  Done,
  Failed,
}

export class SearchModel extends EventEmitter {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private controller: AbortController | null = null;
  private cache = new Map<string, SearchResult[]>();
  state: State = State.Idle;
  results: SearchResult[] = [];

  constructor(private readonly fetcher: Fetcher, private readonly delayMs = 150) {
    super();
  }

  type(query: string): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
    }
    const trimmed = query.trim();
    if (trimmed.length === 0) {
      this.setResults([]);
      return;
    }
    const cached = this.cache.get(trimmed);
    if (cached) {
      this.setResults(cached);
      return;
    }
    this.state = State.Waiting;
    this.timer = setTimeout(() => void this.run(trimmed), this.delayMs);
  }

  private async run(query: string): Promise<void> {
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.state = State.Loading;
    try {
      const found = await this.fetcher(query, controller.signal);
      if (controller.signal.aborted) {
        return;
      }
      const ranked = [...found].sort((a, b) => b.score - a.score);
      this.cache.set(query, ranked);
      this.setResults(ranked);
    } catch (err: unknown) {
      if (!controller.signal.aborted) {
        this.state = State.Failed;
        this.emit("error", err instanceof Error ? err : new Error(String(err)));
      }
    }
  }

  private setResults(results: SearchResult[]): void {
    this.results = results;
    this.state = State.Done;
    this.emit("results", results);
  }
}

export function highlight(title: string, query: string): string {
  const i = title.toLowerCase().indexOf(query.toLowerCase());
  if (i < 0) {
    return title;
  }
  return `${title.slice(0, i)}<b>${title.slice(i, i + query.length)}</b>${title.slice(i + query.length)}`;
}
