"""mmdet3d 0.x configs translated to 1.x."""
