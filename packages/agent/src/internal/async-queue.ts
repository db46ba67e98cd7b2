/**
 * An unbounded first-in, first-out queue whose `next()` waits for an item. Items pushed before anyone asks are kept,
 * so a clarification raised before the owner starts listening is not lost.
 */
export class AsyncQueue<Item> {
  readonly #items: Item[] = [];
  readonly #takers: Array<(item: Item) => void> = [];

  push(item: Item): void {
    const taker = this.#takers.shift();
    if (taker === undefined) this.#items.push(item);
    else taker(item);
  }

  next(): Promise<Item> {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift() as Item);
    return new Promise<Item>((resolve) => {
      this.#takers.push(resolve);
    });
  }
}
