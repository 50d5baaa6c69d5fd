// A first-in first-out queue: a small file written for the eval harness's tests.
'use strict';

class Queue {
  constructor() {
    this.items = [];
    this.head = 0;
  }

  push(value) {
    this.items.push(value);
    return this.items.length - this.head;
  }

  shift() {
    if (this.head === this.items.length) {
      return undefined;
    }
    const value = this.items[this.head];
    this.head += 1;
    return value;
  }
}

module.exports = { Queue };
