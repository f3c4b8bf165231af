//! The geometric mapping of thesis 4.2.3: for a 2-D grid pattern, the traffic leaving a
//! leaf is proportional to the perimeter of the region of the grid its ranks cover, so give
//! each leaf a tile as close to a square as divides the grid (area = nodes per leaf; 8 x 4
//! for 32 nodes on the 64 x 72 stencil).
//!
//! Tiles go to leaves in row-major tile order, so consecutive leaves, and thus the leaves of
//! one pod, cover a band of whole tile rows. The thesis does not say how it dealt the tiles
//! ("the exact mapping does not matter" for leaf traffic); the order only moves some hops
//! between 3 (same pod) and 5 (across pods): 1.421 with this order against the thesis' 1.433.

use std::fmt;
use std::str::FromStr;

use super::matrix::CommMatrix;
use super::TrafficError;

/// A `width x height` grid of ranks numbered row-major, each talking to its 4 neighbours.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Ranks along x (the row-major fast axis).
    pub width: u32,
    /// Ranks along y.
    pub height: u32,
}

impl Grid {
    /// The grid this matrix is a stencil on, if any: every flow joins two grid neighbours
    /// (difference 1 within a row, or `width`) and every pair of neighbours communicates.
    /// Both sides must be at least 2 (a line is not a 2-D grid). A relabelled grid is not
    /// recognised; partitioning handles it.
    pub fn detect(matrix: &CommMatrix) -> Option<Grid> {
        let ranks = matrix.ranks();
        let width = matrix
            .flows()
            .iter()
            .map(|f| f.src.abs_diff(f.dst))
            .find(|&d| d > 1)?;
        if width < 2 || ranks % width != 0 || ranks / width < 2 {
            return None;
        }
        let grid = Grid {
            width,
            height: ranks / width,
        };
        let mut pairs = Vec::with_capacity(matrix.flows().len());
        for flow in matrix.flows() {
            let (low, high) = (flow.src.min(flow.dst), flow.src.max(flow.dst));
            let neighbours = match high - low {
                1 => low % width != width - 1,
                d => d == width,
            };
            if !neighbours {
                return None;
            }
            pairs.push((low, high));
        }
        pairs.sort_unstable();
        pairs.dedup();
        (pairs.len() as u64 == grid.neighbour_pairs()).then_some(grid)
    }

    /// Pairs of neighbours: (w - 1) h horizontal and w (h - 1) vertical.
    fn neighbour_pairs(&self) -> u64 {
        let (w, h) = (u64::from(self.width), u64::from(self.height));
        (w - 1) * h + w * (h - 1)
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// A `width x height` block of ranks (width along the row-major fast axis).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Ranks along x.
    pub width: u32,
    /// Ranks along y.
    pub height: u32,
}

impl Tile {
    /// Ranks in the tile.
    pub fn area(&self) -> u32 {
        self.width * self.height
    }

    /// Whether whole tiles cover `grid` exactly.
    pub fn divides(&self, grid: Grid) -> bool {
        grid.width % self.width == 0 && grid.height % self.height == 0
    }

    /// The tile of `area` ranks with the least perimeter whose sides divide the grid (4.2.3:
    /// the integers closest to sqrt(area)); the wider one of a tie (8x4, not 4x8).
    pub fn choose(grid: Grid, area: u32) -> Option<Tile> {
        (1..=area)
            .filter(|w| area % w == 0)
            .map(|width| Tile {
                width,
                height: area / width,
            })
            .filter(|tile| tile.divides(grid))
            .min_by_key(|tile| (tile.width + tile.height, std::cmp::Reverse(tile.width)))
    }
}

impl fmt::Display for Tile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

impl FromStr for Tile {
    type Err = TrafficError;

    /// `WxH`, both positive.
    fn from_str(text: &str) -> Result<Self, TrafficError> {
        let (width, height) = parse_dimensions(text).ok_or_else(|| {
            TrafficError::Spec(format!(
                "bad tile '{text}': expected WxH with positive whole numbers, e.g. 8x4"
            ))
        })?;
        Ok(Tile { width, height })
    }
}

/// `WxH` with both sides positive and the area within u32.
pub(crate) fn parse_dimensions(text: &str) -> Option<(u32, u32)> {
    let (w, h) = text.split_once('x')?;
    let (w, h): (u32, u32) = (w.parse().ok()?, h.parse().ok()?);
    (w > 0 && h > 0 && w.checked_mul(h).is_some()).then_some((w, h))
}

/// The ranks tile by tile (tiles in row-major order, ranks row-major inside a tile): the
/// k-th goes on the k-th node, so each leaf gets one tile.
pub(crate) fn tiled_order(grid: Grid, tile: Tile) -> Vec<u32> {
    let mut order = Vec::with_capacity((grid.width * grid.height) as usize);
    for tile_y in 0..grid.height / tile.height {
        for tile_x in 0..grid.width / tile.width {
            for y in tile_y * tile.height..(tile_y + 1) * tile.height {
                for x in tile_x * tile.width..(tile_x + 1) * tile.width {
                    order.push(y * grid.width + x);
                }
            }
        }
    }
    order
}
