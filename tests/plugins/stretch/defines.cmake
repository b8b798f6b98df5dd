# OpenCV's resize.
set(_link opencv_core opencv_imgproc)
