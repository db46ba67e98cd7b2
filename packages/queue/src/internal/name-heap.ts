/** A binary min-heap of strings in code-unit order, which for task names within one priority is run order. */
export class NameHeap {
  readonly #items: string[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): string | undefined {
    return this.#items[0];
  }

  push(item: string): void {
    const items = this.#items;
    items.push(item);
    let index = items.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      const parentItem = items[parent] as string;
      if (parentItem <= item) break;
      items[index] = parentItem;
      index = parent;
    }
    items[index] = item;
  }

  pop(): string | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    let index = 0;
    const length = items.length;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      let child = left;
      if (right < length && (items[right] as string) < (items[left] as string)) child = right;
      const childItem = items[child] as string;
      if (last <= childItem) break;
      items[index] = childItem;
      index = child;
    }
    items[index] = last;
    return top;
  }

  /** Removes one item wherever it is (O(n): only for the rare file superseded by another of its task). */
  delete(item: string): boolean {
    const items = this.#items;
    const index = items.indexOf(item);
    if (index < 0) return false;
    const rest = items.filter((_, position) => position !== index);
    items.length = 0;
    for (const kept of rest) this.push(kept);
    return true;
  }

  clear(): void {
    this.#items.length = 0;
  }
}
