//! Small graph utilities for the compiler passes (no recursion: grammar
//! sizes come from API requests, so depth is user-controlled).

/// Strongly connected components by an iterative Tarjan. Components are
/// numbered in reverse topological order: every edge goes from a component
/// to one with a smaller or equal number, so processing components in
/// increasing order sees successors first.
///
/// `succ(v)` iterates `v`'s successors; it is called once per vertex and its
/// iterator kept on the search stack (no list is copied per vertex).
pub fn strongly_connected_components<I: Iterator<Item = usize>>(
    n: usize,
    succ: impl Fn(usize) -> I,
) -> (Vec<usize>, usize) {
    const UNVISITED: usize = usize::MAX;
    let mut index = vec![UNVISITED; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![UNVISITED; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut counter = 0usize;
    let mut num_comps = 0usize;
    let mut calls: Vec<(usize, I)> = Vec::new();
    for root in 0..n {
        if index[root] != UNVISITED {
            continue;
        }
        index[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root] = true;
        calls.push((root, succ(root)));
        while let Some((v, edges)) = calls.last_mut() {
            let v = *v;
            if let Some(w) = edges.next() {
                if index[w] == UNVISITED {
                    index[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, succ(w)));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                calls.pop();
                if low[v] == index[v] {
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp[w] = num_comps;
                        if w == v {
                            break;
                        }
                    }
                    num_comps += 1;
                }
                if let Some((parent, _)) = calls.last() {
                    low[*parent] = low[*parent].min(low[v]);
                }
            }
        }
    }
    (comp, num_comps)
}

/// Lists by key `0..n` in one array: the values of `(key, value)` pairs,
/// each key's in the order given (a counting sort; one allocation, not one
/// per key).
pub struct Grouped {
    start: Vec<usize>,
    values: Vec<usize>,
}

impl Grouped {
    pub fn new(n: usize, pairs: Vec<(usize, usize)>) -> Grouped {
        let mut start = vec![0usize; n + 1];
        for &(k, _) in &pairs {
            start[k + 1] += 1;
        }
        for k in 0..n {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut values = vec![0usize; pairs.len()];
        for (k, v) in pairs {
            values[fill[k]] = v;
            fill[k] += 1;
        }
        Grouped { start, values }
    }

    /// The lists in key order.
    pub fn iter(&self) -> impl Iterator<Item = &[usize]> {
        self.start.windows(2).map(|w| &self.values[w[0]..w[1]])
    }
}

impl std::ops::Index<usize> for Grouped {
    type Output = [usize];
    fn index(&self, k: usize) -> &[usize] {
        &self.values[self.start[k]..self.start[k + 1]]
    }
}

/// The vertices of each component of [`strongly_connected_components`]'s
/// numbering, in increasing order.
pub fn component_members(comp: &[usize], num_comps: usize) -> Grouped {
    Grouped::new(num_comps, comp.iter().enumerate().map(|(v, &c)| (c, v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_in_reverse_topological_order() {
        // 0 → 1 ⇄ 2 → 3
        let edges = [vec![1], vec![2], vec![1, 3], vec![]];
        let (comp, n) = strongly_connected_components(4, |v| edges[v].iter().copied());
        assert_eq!(n, 3);
        assert_eq!(comp[1], comp[2]);
        assert!(comp[3] < comp[1] && comp[1] < comp[0]);
    }
}
