//! How a congested fraction looks (thesis 3.4): "links with a low congested fraction are thin
//! and light gray, while heavily congested links are thick and dark".

use plotters::style::RGBColor;

/// Gray of a barely congested link (CSS lightgray); a fully congested one is black.
const LIGHTEST: f64 = 211.0;

/// Switches: light blue circles; node boxes: thin light blue outlines.
pub const SWITCH_BLUE: RGBColor = RGBColor(173, 216, 230);
pub const OUTLINE_BLUE: RGBColor = RGBColor(120, 170, 210);

/// The colour of fraction `f` (clamped to 0..=1).
pub fn colour(f: f64) -> RGBColor {
    let level = (LIGHTEST * (1.0 - f.clamp(0.0, 1.0))).round() as u8;
    RGBColor(level, level, level)
}

/// Stroke width of fraction `f`: 1 pixel up to `max` pixels.
pub fn thickness(f: f64, max: u32) -> u32 {
    1 + (f.clamp(0.0, 1.0) * f64::from(max.saturating_sub(1))).round() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn darker_and_thicker_with_congestion() {
        assert_eq!(colour(0.0), RGBColor(211, 211, 211));
        assert_eq!(colour(1.0), RGBColor(0, 0, 0));
        assert_eq!(colour(1.7), RGBColor(0, 0, 0));
        assert!(colour(0.3).0 > colour(0.6).0);
        assert_eq!(thickness(0.0, 6), 1);
        assert_eq!(thickness(1.0, 6), 6);
        assert!(thickness(0.2, 6) < thickness(0.8, 6));
    }
}
